use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

const ID: &str = "0190a8f2-1c2d-7000-8000-00000000abcd";

fn link(extra: Value) -> Value {
    let mut m = json!({"type": "resource_link", "uri": format!("nexus://uploads/{ID}"), "name": "out.png"});
    for (k, v) in extra.as_object().unwrap() {
        m.as_object_mut().unwrap().insert(k.clone(), v.clone());
    }
    m
}

fn code_of(content: Value) -> &'static str {
    normalize_content(&content).expect_err("expected refusal").code
}

#[test]
fn a_bare_string_is_one_text_block() {
    assert_eq!(normalize_content(&json!("hi")).unwrap(), vec![Block::Text("hi".into())]);
    let a = blocks_to_json(&normalize_content(&json!("hi")).unwrap());
    let b = blocks_to_json(&normalize_content(&json!([{"type": "text", "text": "hi"}])).unwrap());
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(a.to_string(), r#"[{"type":"text","text":"hi"}]"#);
}

#[test]
fn blank_text_writes_nothing() {
    for blank in ["", " ", "\n\t ", "\u{2003}"] {
        assert_eq!(normalize_content(&json!(blank)).unwrap(), vec![], "{blank:?}");
        assert_eq!(
            normalize_content(&json!([{"type": "text", "text": blank}])).unwrap(),
            vec![]
        );
    }
    assert_eq!(normalize_content(&json!([])).unwrap(), vec![]);
    assert_eq!(blocks_to_json(&[]).to_string(), "[]");
    let kept = normalize_content(&json!([{"type": "text", "text": " "}, {"type": "text", "text": " a "}])).unwrap();
    assert_eq!(kept, vec![Block::Text(" a ".into())], "non-blank text is kept verbatim");
}

#[test]
fn resource_links_are_kept_verbatim_in_member_order() {
    let l = json!({"name": "r.txt", "size": 12, "type": "resource_link", "description": "d",
        "uri": format!("nexus://uploads/{ID}"), "mimeType": "text/plain", "title": "T"});
    let blocks = normalize_content(&json!([{"type": "text", "text": "see"}, l.clone()])).unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks_to_json(&blocks)[1].to_string(), l.to_string());
    assert_eq!(linked_uploads(&blocks), vec![Uuid::parse_str(ID).unwrap()]);
    assert_eq!(text_projection(&blocks), "see");
}

#[test]
fn uppercase_upload_ids_are_accepted() {
    let l = json!({"type": "resource_link", "uri": format!("nexus://uploads/{}", ID.to_uppercase()), "name": "n"});
    let blocks = normalize_content(&json!([l])).unwrap();
    assert_eq!(linked_uploads(&blocks), vec![Uuid::parse_str(ID).unwrap()]);
}

#[test]
fn invalid_links() {
    let bad_uris = [
        json!(format!("https://example.com/{ID}")),
        json!("nexus://uploads/not-a-uuid"),
        json!(format!("nexus://uploads/{}", ID.replace('-', ""))),
        json!(format!("nexus://uploads/{ID}/x")),
        json!(format!("nexus://captures/{ID}")),
        json!(5),
    ];
    for uri in bad_uris {
        assert_eq!(
            code_of(json!([link(json!({"uri": uri}))])),
            code::INVALID_CONTENT,
            "{uri}"
        );
    }
    for (field, v) in [
        ("name", json!("")),
        ("name", json!(3)),
        ("mimeType", json!(1)),
        ("title", Value::Null),
        ("description", json!({})),
        ("size", json!(-1)),
        ("size", json!(1.5)),
        ("size", json!("12")),
        ("annotations", json!({})),
        ("_meta", json!({})),
    ] {
        assert_eq!(
            code_of(json!([link(json!({field: v}))])),
            code::INVALID_CONTENT,
            "{field}={v}"
        );
    }
    let mut no_name = link(json!({}));
    no_name.as_object_mut().unwrap().shift_remove("name");
    assert_eq!(code_of(json!([no_name])), code::INVALID_CONTENT);
    let mut no_uri = link(json!({}));
    no_uri.as_object_mut().unwrap().shift_remove("uri");
    assert_eq!(code_of(json!([no_uri])), code::INVALID_CONTENT);
    assert!(normalize_content(&json!([link(json!({"size": 0}))])).is_ok());
}

#[test]
fn invalid_shapes() {
    for bad in [json!(1), json!(true), Value::Null, json!({"type": "text", "text": "x"})] {
        assert_eq!(code_of(bad.clone()), code::INVALID_CONTENT, "{bad}");
    }
    for bad in [
        json!(["x"]),
        json!([{"text": "x"}]),
        json!([{"type": 1}]),
        json!([{"type": ""}]),
        json!([{"type": "text"}]),
        json!([{"type": "text", "text": 3}]),
        json!([{"type": "text", "text": "x", "annotations": {}}]),
    ] {
        assert_eq!(code_of(bad.clone()), code::INVALID_CONTENT, "{bad}");
    }
}

#[test]
fn other_kinds_are_unsupported() {
    for kind in ["image", "audio", "resource", "video"] {
        assert_eq!(
            code_of(json!([{"type": kind, "data": "…"}])),
            code::UNSUPPORTED_CONTENT_KIND,
            "{kind}"
        );
    }
}

#[test]
fn block_count_bound() {
    let fits = Value::Array(vec![json!({"type": "text", "text": "x"}); bounds::CONTENT_BLOCKS]);
    assert_eq!(normalize_content(&fits).unwrap().len(), bounds::CONTENT_BLOCKS);
    let over = Value::Array(vec![json!(""); bounds::CONTENT_BLOCKS + 1]);
    assert_eq!(code_of(over), code::TOO_MANY_CONTENT_BLOCKS);
}

#[test]
fn size_bound_is_canonical_json() {
    // A string's canonical form adds its two quotes.
    let fits = "x".repeat(bounds::RESULT_CONTENT - 2);
    assert!(normalize_content(&json!(fits)).is_ok());
    let over = "x".repeat(bounds::RESULT_CONTENT - 1);
    assert_eq!(code_of(json!(over)), code::RESULT_TOO_LARGE);
    // [{"text":"…","type":"text"}] is 27 bytes of framing.
    let fits = json!([{"type": "text", "text": "x".repeat(bounds::RESULT_CONTENT - 27)}]);
    assert_eq!(jcs::len(&fits), bounds::RESULT_CONTENT);
    assert!(normalize_content(&fits).is_ok());
    let over = json!([{"type": "text", "text": "x".repeat(bounds::RESULT_CONTENT - 26)}]);
    assert_eq!(code_of(over), code::RESULT_TOO_LARGE);
}

#[test]
fn text_projection_joins_text_blocks() {
    let blocks = normalize_content(&json!([
        {"type": "text", "text": "a"}, link(json!({})), {"type": "text", "text": "b\nc"}
    ]))
    .unwrap();
    assert_eq!(text_projection(&blocks), "a\nb\nc");
    assert_eq!(text_projection(&[]), "");
}

#[test]
fn linked_uploads_in_order_once() {
    let other = "0190a8f2-1c2d-7000-8000-000000000001";
    let l2 = json!({"type": "resource_link", "uri": format!("nexus://uploads/{other}"), "name": "b"});
    let text = json!({"type": "text", "text": "x"});
    let blocks = normalize_content(&json!([link(json!({})), l2, text, link(json!({}))])).unwrap();
    assert_eq!(
        linked_uploads(&blocks),
        vec![Uuid::parse_str(ID).unwrap(), Uuid::parse_str(other).unwrap()]
    );
    assert!(linked_uploads(&[Block::Text("x".into())]).is_empty());
}

#[test]
fn stored_blocks_read_back() {
    let blocks = normalize_content(&json!([{"type": "text", "text": "a"}, link(json!({"size": 3}))])).unwrap();
    assert_eq!(blocks_from_json(&blocks_to_json(&blocks)), Some(blocks));
    assert_eq!(blocks_from_json(&json!("x")), None);
    assert_eq!(blocks_from_json(&json!([{"type": "image"}])), None);
}

proptest! {
    #[test]
    fn bare_string_equals_single_text_block(s in any::<String>()) {
        let bare = normalize_content(&json!(s));
        let block = normalize_content(&json!([{"type": "text", "text": s}]));
        prop_assert_eq!(&bare, &block);
        let bare = bare.unwrap();
        prop_assert_eq!(blocks_to_json(&bare).to_string(), blocks_to_json(&block.unwrap()).to_string());
        prop_assert_eq!(bare.is_empty(), s.trim().is_empty());
    }
}

proptest! {
    /// A reply writes blocks through `Serialize`, storage through `to_json`: the bytes agree.
    #[test]
    fn serialized_blocks_match_their_stored_json(
        texts in proptest::collection::vec("[a-z \\n\"\\\\é]{1,12}", 0..4),
        described in proptest::option::of("[a-zA-Z \"]{0,10}"),
        size in proptest::option::of(any::<u32>()),
    ) {
        let mut content: Vec<Value> = texts
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        let mut l = link(json!({}));
        if let Some(d) = described {
            l.as_object_mut().unwrap().insert("description".into(), json!(d));
        }
        if let Some(n) = size {
            l.as_object_mut().unwrap().insert("size".into(), json!(n));
        }
        content.insert(content.len() / 2, l);
        let blocks = normalize_content(&Value::Array(content)).unwrap();
        prop_assert_eq!(serde_json::to_string(&blocks).unwrap(), blocks_to_json(&blocks).to_string());
    }
}
