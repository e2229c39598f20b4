//! Ids on the wire: the one text grammar of a UUID that the document's schemas carry (every
//! id the API takes is a UUID in its hyphenated form). The server's query and body grammars use
//! [`UUID_PATTERN`] too, so the pattern is written once.

use utoipa::openapi::schema::{Array, ArrayBuilder, Object, ObjectBuilder, SchemaFormat, SchemaType, Type};

/// A UUID's text: the hyphenated form, any case.
pub const UUID_PATTERN: &str = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

fn uuid_of(schema_type: SchemaType) -> Object {
    ObjectBuilder::new()
        .schema_type(schema_type)
        .format(Some(SchemaFormat::Custom("uuid".into())))
        .pattern(Some(UUID_PATTERN))
        .build()
}

/// The schema of a UUID string (for `#[schema(schema_with = …)]`).
pub fn uuid() -> Object {
    uuid_of(SchemaType::Type(Type::String))
}

/// The schema of a UUID string or `null` (for `#[schema(schema_with = …)]`).
pub fn nullable_uuid() -> Object {
    uuid_of(SchemaType::from_iter([Type::String, Type::Null]))
}

/// The schema of a list of UUID strings, or `null` (for `#[schema(schema_with = …)]`).
pub fn nullable_uuid_list() -> Array {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(uuid())
        .build()
}
