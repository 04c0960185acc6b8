//! Credentials bound to one origin, cards that are not used, and peers that answer badly.

use super::*;
use volcanic_a2a::{Action, Credential};
use volcanic_testkit::a2a_peer::CardFault;

fn bearer_for(url: &str, token: &str) -> A2aSettings {
    let mut s = quick();
    s.add_credential(url, Credential::Bearer(token.into())).unwrap();
    s
}

#[tokio::test]
async fn a_bearer_token_goes_to_its_origin_only_even_after_a_redirect() {
    for mode in MODES {
        // The token opens the protected agent.
        let protected = PeerConfig {
            bearer: Some("s3cret".into()),
            ..PeerConfig::new(mode)
        };
        let s = setup_for(protected.clone(), |url| bearer_for(url, "s3cret")).await;
        let out = s.run(send("hello")).await.unwrap();
        assert!(out.contains("answer: hello"), "{mode:?}: {out}");
        let auth: Vec<Option<String>> = s
            .peer
            .requests()
            .iter()
            .filter(|r| r.rpc.is_some())
            .map(|r| r.header("authorization").map(str::to_owned))
            .collect();
        assert_eq!(auth, vec![Some("Bearer s3cret".to_owned())]);

        // Without it: a clear 401 naming the config key.
        let open = setup_with(protected, quick()).await;
        let e = open.run(send("hello")).await.unwrap_err();
        assert!(e.contains("HTTP 401") && e.contains("a2a.credentials"), "{e}");

        // The protected agent redirects its calls to another origin: followed, without the token.
        let other = A2aPeer::start(PeerConfig::new(mode)).await.unwrap();
        let redirecting = PeerConfig {
            bearer: Some("s3cret".into()),
            redirect_to: Some(format!("{}/", other.url())),
            ..PeerConfig::new(mode)
        };
        let r = setup_for(redirecting, |url| bearer_for(url, "s3cret")).await;
        let out = r.run(send("hello")).await.unwrap();
        assert!(out.contains("answer: hello"), "answered by the other origin: {out}");
        let first = r.peer.requests().into_iter().find(|q| q.rpc.is_some()).unwrap();
        assert_eq!(first.header("authorization"), Some("Bearer s3cret"));
        let seen = other.requests();
        assert!(!seen.is_empty());
        for q in seen {
            assert_eq!(
                q.header("authorization"),
                None,
                "{mode:?}: the token went to {}",
                other.url()
            );
        }
    }
}

#[tokio::test]
async fn an_api_key_goes_in_its_header_to_its_origin() {
    let key = Some(("x-api-key".to_owned(), "key-0123456789".to_owned()));
    let config = PeerConfig {
        api_key: key,
        ..PeerConfig::new(PeerMode::V03Only)
    };
    let s = setup_for(config.clone(), |url| {
        let mut settings = quick();
        let credential = Credential::Header {
            name: "X-API-Key".into(),
            value: "key-0123456789".into(),
        };
        settings.add_credential(url, credential).unwrap();
        settings
    })
    .await;
    assert!(s.run(send("hello")).await.unwrap().contains("answer: hello"));
    let open = setup_with(config, quick()).await;
    assert!(open.run(send("hello")).await.unwrap_err().contains("HTTP 401"));
}

#[tokio::test]
async fn a_card_that_does_not_parse_or_names_another_origin_is_reported_not_used() {
    for mode in MODES {
        let s = setup_with(
            PeerConfig {
                card: CardFault::Broken,
                ..PeerConfig::new(mode)
            },
            quick(),
        )
        .await;
        let listed = s.run(args(Action::Agents)).await.unwrap();
        assert!(listed.contains("NOT USABLE") && listed.contains("not JSON"), "{listed}");
        let e = s.run(send("hello")).await.unwrap_err();
        assert!(e.contains("agent card of") && e.contains("not JSON"), "{e}");

        let other = A2aPeer::start(PeerConfig::new(mode)).await.unwrap();
        let fault = CardFault::Endpoint(format!("{}/", other.url()));
        let s = setup_with(
            PeerConfig {
                card: fault,
                ..PeerConfig::new(mode)
            },
            quick(),
        )
        .await;
        let e = s.run(send("hello")).await.unwrap_err();
        assert!(e.contains("another origin"), "{e}");
        assert!(other.requests().is_empty() && s.peer.rpc_methods().is_empty());
    }
}

#[tokio::test]
async fn cards_are_cached_and_refreshed_with_their_etag() {
    let s = setup(PeerMode::V1Only).await;
    s.run(args(Action::Agents)).await.unwrap();
    s.run(send("hello")).await.unwrap();
    let cards = |s: &Setup| {
        s.peer
            .requests()
            .into_iter()
            .filter(|r| r.method == "GET")
            .collect::<Vec<_>>()
    };
    assert_eq!(cards(&s).len(), 1, "fresh cards come from the cache");
    let again = s
        .run(A2aArgs {
            refresh: Some(true),
            ..args(Action::Agents)
        })
        .await
        .unwrap();
    assert!(again.contains("scripted peer"), "{again}");
    let seen = cards(&s);
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1].header("if-none-match"),
        Some(volcanic_testkit::a2a_peer::CARD_ETAG)
    );
}

/// A server answering every request with `response` (raw HTTP), after `delay`.
async fn raw_server(response: &'static [u8], delay: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = sock.read(&mut buf).await;
                tokio::time::sleep(delay).await;
                let _ = sock.write_all(response).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn malformed_oversized_and_slow_answers_are_refused_with_a_clear_error() {
    // A card that is not JSON, from a server that is not an agent.
    let garbage = raw_server(
        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\n<html",
        Duration::ZERO,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    list_agent(dir.path(), &garbage);
    let tool = A2aTool::new(A2aClient::new(quick()).unwrap(), Arc::new(AtomicU32::new(0)));
    let e = tool.call(send("x"), dir.path()).await.unwrap_err().to_string();
    assert!(e.contains("not JSON"), "{e}");

    // A declared body past the cap.
    let big = raw_server(
        b"HTTP/1.1 200 OK\r\ncontent-length: 999999999\r\nconnection: close\r\n\r\n{",
        Duration::ZERO,
    )
    .await;
    list_agent(dir.path(), &big);
    let e = tool.call(send("x"), dir.path()).await.unwrap_err().to_string();
    assert!(e.contains("larger than"), "{e}");

    // No answer within the call bound.
    let slow = raw_server(b"", Duration::from_secs(30)).await;
    list_agent(dir.path(), &slow);
    let settings = A2aSettings {
        call_timeout: Duration::from_millis(300),
        ..quick()
    };
    let tool = A2aTool::new(A2aClient::new(settings).unwrap(), Arc::new(AtomicU32::new(0)));
    let e = tool.call(send("x"), dir.path()).await.unwrap_err().to_string();
    assert!(e.contains("no complete answer within"), "{e}");
}
