//! The API's OpenAPI 3.1 document, built from the route table ([`crate::table::ROUTES`]: method,
//! path, plane, standing) and [`ops::OPS`] (summary, query, bodies typed by `nexus_api`, the
//! route's own error codes). Served at `GET /agent_api/v1/openapi.json` and committed as
//! `contracts/nexus/v1/openapi.json`; `tests/openapi.rs` fails when the two differ or when a
//! route has no entry.
//!
//! Every error answer is documented per status with the envelope whose `code` is one of the
//! words that route can answer with at that status, so a checker reading the document
//! (schemathesis in `.ci/run`) refuses a code the document does not list.

pub mod guard;
pub mod op;
pub mod ops;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use nexus_core::codes::Code;
use serde_json::{Value, json};
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, InfoBuilder, OpenApi, OpenApiBuilder, Paths, Ref, RefOr, Required,
    ResponseBuilder, ResponsesBuilder, Schema,
};

use crate::table::{Plane, ROUTES, Route, Standing};
use op::{Body, Content, In, Kind, Op, Shape};

/// The path the document is served at.
pub const PATH: &str = "/agent_api/v1/openapi.json";

/// The entry of `route` in [`ops::OPS`].
pub fn op_of(route: &Route) -> Option<&'static Op> {
    ops::OPS
        .iter()
        .find(|op| op.method == route.method.as_str() && op.path == route.path)
}

/// The status `route` answers `code` with: the code's own, except on the inbox routes
/// ([`crate::routes::inbox::status`]).
pub fn status_of(route: &Route, code: Code) -> u16 {
    if route.path.starts_with("/agent_api/v1/executor/inbox/") {
        crate::routes::inbox::status(code)
    } else {
        code.status()
    }
}

/// The error codes `route` can answer with: its own, and those of its plane, standing and body.
pub fn codes_of(route: &Route, op: &Op) -> BTreeSet<&'static str> {
    let mut codes: Vec<Code> = op.codes.to_vec();
    if route.plane != Plane::Public {
        // Any route behind a credential reads stored rows, and one may be damaged.
        codes.extend([Code::Unauthorized, Code::Unavailable, Code::CorruptRow]);
    }
    match route.standing {
        Standing::Own => {
            if route.plane != Plane::Public && route.path.contains('{') {
                codes.push(Code::NotFound);
            }
        }
        Standing::Read => codes.push(Code::NotFound),
        Standing::Write => codes.extend([Code::NotFound, Code::NotAuthorized]),
    }
    if !op.query.is_empty() {
        codes.push(Code::ParameterInvalid);
    }
    match op.body {
        Body::None => {}
        Body::Json(_) | Body::Optional(_) => codes.extend([
            Code::BadRequest,
            Code::UnsupportedMediaType,
            Code::ContentTooLarge,
            Code::ParameterMissing,
            Code::ParameterInvalid,
        ]),
        Body::Upload => codes.extend([Code::BadRequest, Code::ParameterMissing, Code::ContentTooLarge]),
    }
    codes.into_iter().map(Code::as_str).collect()
}

/// The document, built once.
pub fn document() -> &'static OpenApi {
    static DOCUMENT: OnceLock<OpenApi> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

/// The document as served and committed: pretty JSON with a final newline.
pub fn document_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let mut text = serde_json::to_string_pretty(document()).expect("the document serializes");
        text.push('\n');
        text
    })
}

/// `GET /agent_api/v1/openapi.json`.
pub async fn serve() -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        document_text(),
    )
        .into_response()
}

fn build() -> OpenApi {
    let mut components = ComponentsBuilder::new()
        .security_scheme("member", bearer("A member credential (`nx_member_…`)."))
        .security_scheme("transport", bearer("An executor transport credential."))
        .schema("Error", error_schema());
    let mut schemas: BTreeMap<String, RefOr<Schema>> = BTreeMap::new();
    let mut paths = Paths::new();
    for route in ROUTES {
        let Some(op) = op_of(route) else { continue };
        let operation = operation(route, op, &mut schemas);
        let method = http_method(route.method.as_str());
        let path = route.path.replace("{*", "{");
        paths.add_path_operation(&path, vec![method], operation);
    }
    for (name, schema) in schemas {
        components = components.schema(name, schema);
    }
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Nexus")
                .version("1")
                .description(Some(
                    "The tool plane of an agent kernel: the member plane (runs, conversations, \
                     approvals, uploads, memory) and the executor transport plane (announce, \
                     inbox, claim, extend, commit). Every failure is the envelope \
                     `{error: {code, message}}` (errors-and-auth.md §1).",
                ))
                .build(),
        )
        .paths(paths)
        .components(Some(components.build()))
        .tags(Some(
            [
                ("public", "No bearer."),
                ("member", "A member credential."),
                ("transport", "An executor transport credential."),
            ]
            .map(|(name, doc)| TagBuilder::new().name(name).description(Some(doc)).build()),
        ))
        .build()
}

fn bearer(doc: &str) -> SecurityScheme {
    let mut http = Http::new(HttpAuthScheme::Bearer);
    http.description = Some(doc.to_string());
    SecurityScheme::Http(http)
}

fn http_method(method: &str) -> HttpMethod {
    match method {
        "GET" => HttpMethod::Get,
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "DELETE" => HttpMethod::Delete,
        other => unreachable!("the route table has no {other} route"),
    }
}

fn plane_tag(plane: Plane) -> &'static str {
    match plane {
        Plane::Public => "public",
        Plane::Member => "member",
        Plane::Transport => "transport",
    }
}

/// `GET /agent_api/v1/workspaces/{ws}/runs/{run}` → `get_workspaces_ws_runs_run`.
fn operation_id(route: &Route) -> String {
    let path = route.path.trim_start_matches("/agent_api/v1");
    let words: Vec<&str> = path
        .split(['/', '{', '}', '*', '.'])
        .filter(|w| !w.is_empty())
        .collect();
    let index = if path.len() > 1 && path.ends_with('/') {
        "_index"
    } else {
        ""
    };
    format!("{}_{}{index}", route.method.as_str().to_lowercase(), words.join("_"))
}

fn operation(
    route: &Route,
    op: &Op,
    schemas: &mut BTreeMap<String, RefOr<Schema>>,
) -> utoipa::openapi::path::Operation {
    let mut builder = OperationBuilder::new()
        .operation_id(Some(operation_id(route)))
        .summary(Some(op.summary))
        .tag(plane_tag(route.plane));
    builder = match route.plane {
        Plane::Public => builder.securities(Some(Vec::<SecurityRequirement>::new())),
        Plane::Member => builder.security(SecurityRequirement::new("member", Vec::<String>::new())),
        Plane::Transport => builder.security(SecurityRequirement::new("transport", Vec::<String>::new())),
    };
    for name in path_params(route.path) {
        builder = builder.parameter(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .schema(Some(from_json(json!({"type": "string"})))),
        );
    }
    for param in op.query {
        let mut parameter = ParameterBuilder::new()
            .name(param.name)
            .parameter_in(match param.place {
                In::Query => ParameterIn::Query,
                In::Header => ParameterIn::Header,
            })
            .required(if param.required {
                Required::True
            } else {
                Required::False
            })
            .description(Some(param.doc))
            .schema(Some(from_json(kind_schema(param.kind))));
        if let Kind::OneOf(_) = param.kind {
            parameter = parameter.style(Some(ParameterStyle::Form)).explode(Some(true));
        }
        builder = builder.parameter(parameter);
    }
    match op.body {
        Body::None => {}
        Body::Json(shape) | Body::Optional(shape) => {
            let content = ContentBuilder::new().schema(Some(shape_schema(shape, schemas))).build();
            let required = if matches!(op.body, Body::Json(_)) {
                Required::True
            } else {
                Required::False
            };
            builder = builder.request_body(Some(
                RequestBodyBuilder::new()
                    .required(Some(required))
                    .content("application/json", content)
                    .build(),
            ));
        }
        Body::Upload => {
            // The part is any bytes: a typeless schema with a media type (utoipa's `AnyValue`).
            let part = ObjectBuilder::new()
                .schema_type(SchemaType::AnyValue)
                .content_media_type("application/octet-stream");
            let schema: RefOr<Schema> = ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::Object))
                .property("upload[file]", part)
                .required("upload[file]")
                .into();
            builder = builder.request_body(Some(
                RequestBodyBuilder::new()
                    .required(Some(Required::True))
                    .content(
                        "multipart/form-data",
                        ContentBuilder::new().schema(Some(schema)).build(),
                    )
                    .build(),
            ));
        }
    }
    let mut responses = ResponsesBuilder::new();
    for reply in op.replies {
        let mut response = ResponseBuilder::new().description(reply.doc);
        match reply.content {
            Content::Json(shape) => {
                response = response.content(
                    "application/json",
                    ContentBuilder::new().schema(Some(shape_schema(shape, schemas))).build(),
                );
            }
            Content::Bytes => {
                // The blob's own detected type (uploads.md §1).
                response = response.content("*/*", ContentBuilder::new().build());
            }
            Content::Events => {
                // Each message: `id:` (durable events), `event:` and `data:` (JSON text).
                let message = json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "event": {"type": "string"},
                        "data": {"type": "string", "contentMediaType": "application/json"},
                    },
                });
                response = response.content(
                    "text/event-stream",
                    ContentBuilder::new().schema(Some(from_json(message))).build(),
                );
            }
            Content::Page => {
                response = response.content(
                    "text/html",
                    ContentBuilder::new()
                        .schema(Some(from_json(json!({"type": "string"}))))
                        .build(),
                );
            }
            Content::Empty => {}
        }
        responses = responses.response(reply.status.to_string(), response.build());
    }
    let mut by_status: BTreeMap<u16, Vec<&'static str>> = BTreeMap::new();
    for word in codes_of(route, op) {
        let code = Code::from_word(word).expect("a code of the table");
        by_status.entry(status_of(route, code)).or_default().push(word);
    }
    for (status, words) in by_status {
        let description = format!("The error envelope, `code` one of: {}.", words.join(", "));
        let response = ResponseBuilder::new().description(description).content(
            "application/json",
            ContentBuilder::new().schema(Some(error_with(&words))).build(),
        );
        responses = responses.response(status.to_string(), response.build());
    }
    builder.responses(responses.build()).build()
}

/// The `{name}` segments of a path template (`{*rest}` included).
fn path_params(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| name.trim_start_matches('*').to_string())
        .collect()
}

/// A UUID's text (defined once, with the wire types).
const UUID: &str = nexus_api::ids::UUID_PATTERN;

/// A path segment that is not `.` or `..`, of letters, digits, `.`, `_` and `-`.
const SEGMENT: &str = r"([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)";

fn kind_schema(kind: Kind) -> Value {
    let path_bytes = nexus_kernel::memory::PATH_BYTES;
    match kind {
        Kind::Text => json!({"type": "string"}),
        Kind::Integer => json!({"type": "integer", "format": "int64", "minimum": i64::MIN, "maximum": i64::MAX}),
        Kind::Sequence => json!({"type": "integer", "format": "int64", "minimum": 0, "maximum": i64::MAX}),
        Kind::Boolean => json!({"type": "boolean"}),
        Kind::Uuid => json!({"type": "string", "format": "uuid", "pattern": UUID}),
        Kind::OptionalUuid => json!({"type": "string", "pattern": format!("^({})?$", &UUID[1..UUID.len() - 1])}),
        Kind::Cursor => json!({"type": "string", "pattern": "^[0-9]{0,18}$"}),
        Kind::MemoryPath => json!({
            "type": "string",
            "maxLength": path_bytes,
            // `conversation/…` paths also need `conversation_public_id` (described on it).
            "pattern": format!("^(user|workspace)(/{SEGMENT})+$"),
        }),
        Kind::MemoryPrefix => json!({
            "type": "string",
            "maxLength": path_bytes,
            "pattern": format!("^((user|workspace|conversation)(/{SEGMENT})*(/[A-Za-z0-9._-]*)?)?$"),
        }),
        Kind::Key => json!({"type": "string", "pattern": "^[!-~]{1,64}$"}),
        // A superset of what the server serves (a Unicode letter or digit, `char::is_alphanumeric`):
        // a character that is neither white space nor ASCII punctuation. An ASCII-only class would
        // call a served query such as "Ģª" invalid, and a `\p{…}` class is not in every checker's
        // regex dialect.
        Kind::NonBlank => json!({"type": "string", "pattern": "[^\\s!-/:-@\\[-`{-~]"}),
        Kind::SearchCursor => {
            json!({"type": "string", "pattern": "^[0-3][0-9a-f]{15}-[0-9]{1,9}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"})
        }
        Kind::Range(low, high) => json!({"type": "integer", "format": "int64", "minimum": low, "maximum": high}),
        Kind::Words(words) => json!({"type": "string", "enum": words}),
        Kind::OneOf(members) => {
            let properties: serde_json::Map<String, Value> = members
                .iter()
                .map(|(name, kind)| (name.to_string(), kind_schema(*kind)))
                .collect();
            // Neither `maxProperties` nor `additionalProperties: false`: exploded, the object's
            // members are query keys beside any other, which the server ignores as on every
            // route, so a schema counting them would call a request the server serves invalid.
            // "At most one" is the server's 400 (`parameter_invalid`) and the description's.
            json!({"type": "object", "properties": properties})
        }
    }
}

/// The schema of `shape`: a `$ref` to its component (collected with its dependencies into
/// `schemas`), or an inline free-form object.
fn shape_schema(shape: Shape, schemas: &mut BTreeMap<String, RefOr<Schema>>) -> RefOr<Schema> {
    match shape {
        Shape::Typed { name, schema, deps } => {
            let name = name().into_owned();
            let mut found = Vec::new();
            deps(&mut found);
            for (dep, dep_schema) in found {
                schemas.entry(dep).or_insert(dep_schema);
            }
            schemas.entry(name.clone()).or_insert_with(schema);
            RefOr::Ref(Ref::from_schema_name(name))
        }
        Shape::Object(doc) => from_json(json!({"type": "object", "description": doc})),
        Shape::Either(typed, doc) => {
            let first = serde_json::to_value(shape_schema(*typed, schemas)).expect("a schema serializes");
            from_json(json!({"anyOf": [first, {"type": "object", "description": doc}]}))
        }
    }
}

/// The error envelope (the `Error` component).
fn error_schema() -> RefOr<Schema> {
    from_json(json!({
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "reason": {"type": "string"},
                    "path": {"type": "string"},
                },
            },
        },
    }))
}

/// The envelope with its `code` limited to `words`.
fn error_with(words: &[&str]) -> RefOr<Schema> {
    from_json(json!({
        "allOf": [
            {"$ref": "#/components/schemas/Error"},
            {
                "type": "object",
                "properties": {"error": {"type": "object", "properties": {"code": {"type": "string", "enum": words}}}},
            },
        ],
    }))
}

/// A schema written as JSON (the document's own small shapes).
fn from_json(value: Value) -> RefOr<Schema> {
    serde_json::from_value(value).expect("a well-formed schema")
}
