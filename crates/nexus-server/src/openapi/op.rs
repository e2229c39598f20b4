//! The vocabulary of [`super::ops::OPS`]: what the document says about one route beyond what
//! the route table already knows (its method, path, plane and standing).

use std::borrow::Cow;

use nexus_core::codes::Code;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

/// A body's JSON Schema: a `nexus_api` type (a named component), or a free-form object whose
/// shape the description names.
#[derive(Clone, Copy)]
pub enum Shape {
    /// A named component from a `nexus_api` type ([`typed`]).
    Typed {
        name: fn() -> Cow<'static, str>,
        schema: fn() -> RefOr<Schema>,
        deps: fn(&mut Vec<(String, RefOr<Schema>)>),
    },
    /// Any JSON object; the text says where its members are specified.
    Object(&'static str),
    /// The typed shape, or another object the text names (`anyOf`).
    Either(&'static Shape, &'static str),
}

/// The [`Shape`] of `T`.
pub const fn typed<T: utoipa::ToSchema>() -> Shape {
    Shape::Typed {
        name: <T as utoipa::ToSchema>::name,
        schema: <T as utoipa::PartialSchema>::schema,
        deps: <T as utoipa::ToSchema>::schemas,
    }
}

/// A parameter's value grammar.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// A signed 64-bit integer.
    Integer,
    /// A non-negative 64-bit integer (a sequence or a position).
    Sequence,
    Boolean,
    /// A UUID.
    Uuid,
    /// A UUID, or empty (the same as absent).
    OptionalUuid,
    /// A page cursor as the route issued it: a non-negative integer (or empty: the start).
    Cursor,
    /// A memory document path (kernel-tools.md §8).
    MemoryPath,
    /// A memory listing prefix: a scope root or a longer string prefix.
    MemoryPrefix,
    /// 1–64 visible ASCII characters (errors-and-auth.md §6).
    Key,
    /// A string with a letter or digit.
    NonBlank,
    /// A history search cursor as the search issued it.
    SearchCursor,
    /// An integer within these bounds.
    Range(i64, i64),
    /// One of the listed words.
    Words(&'static [&'static str]),
    /// At most one of these members, each with its grammar, as separate query keys (an
    /// exploded object parameter; "at most one" is said, not schema: see `kind_schema`).
    OneOf(&'static [(&'static str, Kind)]),
}

/// Where a parameter travels.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum In {
    Query,
    Header,
}

/// One query or header parameter.
#[derive(Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub doc: &'static str,
    pub place: In,
    pub required: bool,
}

/// What a request carries.
#[derive(Clone, Copy)]
pub enum Body {
    None,
    /// `application/json`.
    Json(Shape),
    /// `application/json`, which may be left out (an empty body is `{}`).
    Optional(Shape),
    /// `multipart/form-data` with one part `upload[file]`.
    Upload,
}

/// What a success answer carries.
#[derive(Clone, Copy)]
pub enum Content {
    Json(Shape),
    /// Raw bytes (`application/octet-stream` or the detected type).
    Bytes,
    /// `text/event-stream`.
    Events,
    /// `text/html` and the console's static files.
    Page,
    /// No body.
    Empty,
}

/// One success status.
#[derive(Clone, Copy)]
pub struct Reply {
    pub status: u16,
    pub content: Content,
    pub doc: &'static str,
}

/// One route's documentation.
pub struct Op {
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    pub query: &'static [Param],
    pub body: Body,
    pub replies: &'static [Reply],
    /// The route's own error codes; the builder adds the ones every route of its plane,
    /// standing and body kind can answer with.
    pub codes: &'static [Code],
}

/// A success status with its content.
pub const fn reply(status: u16, content: Content, doc: &'static str) -> Reply {
    Reply { status, content, doc }
}

/// An optional query parameter.
pub const fn param(name: &'static str, kind: Kind, doc: &'static str) -> Param {
    Param {
        name,
        kind,
        doc,
        place: In::Query,
        required: false,
    }
}

/// This parameter, required.
pub const fn required(param: Param) -> Param {
    Param {
        required: true,
        ..param
    }
}

/// A header parameter.
pub const fn header(name: &'static str, kind: Kind, doc: &'static str, required: bool) -> Param {
    Param {
        name,
        kind,
        doc,
        place: In::Header,
        required,
    }
}
