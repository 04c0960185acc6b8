use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn served() -> Url {
    Url::parse("http://127.0.0.1:4000/.well-known/agent-card.json").unwrap_or_else(|e| panic!("{e}"))
}

fn v1_interface(url: &str, version: &str) -> Value {
    json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": version})
}

fn card_1_0(interfaces: Vec<Value>) -> Vec<u8> {
    json!({"name": "peer", "description": "d", "version": "1", "supportedInterfaces": interfaces,
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "echo", "description": "echoes", "tags": []}]})
    .to_string()
    .into_bytes()
}

#[test]
fn the_dialect_comes_from_the_card_and_1_0_is_preferred() {
    let both = card_1_0(vec![
        v1_interface("http://127.0.0.1:4000/v03", "0.3"),
        v1_interface("http://127.0.0.1:4000/", "1.0"),
    ]);
    let c = parse_card(&served(), &both).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((c.dialect, c.endpoint.path(), c.streaming), (Dialect::V1, "/", true));
    assert_eq!(c.skills, vec![("echo".to_owned(), "echoes".to_owned())]);
    let only_03 = json!({"name": "old", "url": "http://127.0.0.1:4000/rpc", "version": "1",
        "protocolVersion": "0.3.0", "capabilities": {"pushNotifications": true}, "skills": []});
    let c = parse_card(&served(), only_03.to_string().as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((c.dialect, c.endpoint.path(), c.push), (Dialect::V03, "/rpc", true));
}

#[test]
fn a_bad_card_or_one_from_another_origin_is_refused_with_the_reason() {
    let other = card_1_0(vec![v1_interface("http://127.0.0.1:4001/", "1.0")]);
    let e = parse_card(&served(), &other).err().unwrap_or_default();
    assert!(e.contains("another origin"), "{e}");
    for (body, needle) in [
        (b"not json".to_vec(), "not JSON"),
        (
            json!({"name": "x"}).to_string().into_bytes(),
            "not an A2A 1.0 or 0.3 card",
        ),
        (
            json!({"name": "x", "url": "ftp://h/", "version": "1"})
                .to_string()
                .into_bytes(),
            "not http(s)",
        ),
        (
            json!({"name": "x", "url": "http://h/", "version": "1", "protocolVersion": "2.0"})
                .to_string()
                .into_bytes(),
            "2.0",
        ),
        (
            card_1_0(vec![json!({"url": "http://127.0.0.1:4000/"})]),
            "no JSON-RPC interface",
        ),
    ] {
        let e = parse_card(&served(), &body).err().unwrap_or_default();
        assert!(e.contains(needle), "{needle}: {e}");
    }
}
