//! Helpers for the Bot API double's own tests: a server, calls in each encoding, multipart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

use super::BotApiServer;

/// The token the test servers accept.
pub(crate) const TOKEN: &str = "123456:TEST-token";

/// A reqwest client (plain HTTP; the provider install keeps reqwest's TLS setup from panicking).
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().expect("reqwest client")
}

/// Starts a server with [`TOKEN`].
pub(crate) async fn server() -> BotApiServer {
    BotApiServer::start(TOKEN).await.expect("Bot API double starts")
}

/// `/bot<TOKEN>/<method>` on the server.
pub(crate) fn method_url(server: &BotApiServer, method: &str) -> String {
    format!("{}/bot{}/{method}", server.url(), server.token())
}

/// Status and JSON body of a response.
pub(crate) async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON body"))
}

/// POSTs a JSON body to a method.
pub(crate) async fn call(server: &BotApiServer, method: &str, body: Value) -> (u16, Value) {
    let response = client()
        .post(method_url(server, method))
        .json(&body)
        .send()
        .await
        .expect("request reaches the server");
    answer(response).await
}

/// The `result` of a call that must succeed.
pub(crate) async fn ok(server: &BotApiServer, method: &str, body: Value) -> Value {
    let (status, answer) = call(server, method, body).await;
    assert_eq!(status, 200, "{method} failed: {answer}");
    assert_eq!(answer["ok"], true, "{answer}");
    answer["result"].clone()
}

/// The `description` of a call that must fail with `status`.
pub(crate) async fn fails(server: &BotApiServer, method: &str, body: Value, status: u16) -> String {
    let (got, answer) = call(server, method, body).await;
    assert_eq!(got, status, "{method}: {answer}");
    assert_eq!(answer["ok"], false, "{answer}");
    assert_eq!(answer["error_code"], status, "{answer}");
    answer["description"].as_str().expect("description").to_owned()
}

/// POSTs a form-urlencoded body (already encoded).
pub(crate) async fn call_form(server: &BotApiServer, method: &str, form: &str) -> (u16, Value) {
    let response = client()
        .post(method_url(server, method))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_owned())
        .send()
        .await
        .expect("request reaches the server");
    answer(response).await
}

/// One part of a multipart body.
pub(crate) enum Part<'a> {
    /// A text field.
    Text(&'a str, &'a str),
    /// A file: part name, file name, content.
    File(&'a str, &'a str, &'a [u8]),
}

/// POSTs a `multipart/form-data` body built from `parts`.
pub(crate) async fn call_multipart(server: &BotApiServer, method: &str, parts: &[Part<'_>]) -> (u16, Value) {
    let boundary = "testkit-boundary-7f3a";
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match part {
            Part::Text(name, value) => {
                body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
                );
            }
            Part::File(name, file_name, bytes) => {
                body.extend_from_slice(
                    format!(
                        "Content-Disposition: form-data; name=\"{name}\"; \
                         filename=\"{file_name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(bytes);
                body.extend_from_slice(b"\r\n");
            }
        }
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let response = client()
        .post(method_url(server, method))
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .expect("request reaches the server");
    answer(response).await
}
