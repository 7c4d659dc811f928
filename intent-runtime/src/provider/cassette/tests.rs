use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;

use super::*;
use crate::provider::{ScriptedProvider, ScriptedReply};

/// A fresh path in the temporary folder (no file yet).
fn cassette_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "intent-cassette-unit-{}-{n}-{name}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn request(user: &str) -> ProviderRequest {
    ProviderRequest::text("Answer briefly.", user)
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

/// A provider that must not be called (replay only).
fn silent() -> ScriptedProvider {
    ScriptedProvider::from_fn(|_, _| panic!("the model was called during a replay"))
}

#[test]
fn record_then_replay_serves_the_same_reply_marked_replayed() {
    let path = cassette_path("basic");
    block_on(async {
        let live = Cassette::new(&path)
            .wrap(ScriptedProvider::new(["one", "two"]))
            .unwrap();
        assert_eq!(live.complete(&request("a")).await.unwrap().text, "one");
        assert_eq!(live.complete(&request("b")).await.unwrap().text, "two");

        let replay = Cassette::new(&path).wrap(silent()).unwrap();
        // Matched by request, not by order.
        let b = replay.complete(&request("b")).await.unwrap();
        let a = replay.complete(&request("a")).await.unwrap();
        assert_eq!((a.text.as_str(), b.text.as_str()), ("one", "two"));
        assert!(a.replayed && b.replayed);
        assert_eq!(replay.unserved(), 0);
    });
}

#[test]
fn a_recording_is_the_same_bytes_on_every_run() {
    let first = cassette_path("stable-1");
    let second = cassette_path("stable-2");
    block_on(async {
        for path in [&first, &second] {
            let live = Cassette::new(path)
                .wrap(ScriptedProvider::new([r#"{"value": 3}"#]))
                .unwrap();
            live.complete(&request("count")).await.unwrap();
        }
    });
    let text = std::fs::read_to_string(&first).unwrap();
    assert_eq!(text, std::fs::read_to_string(&second).unwrap());
    assert_eq!(text.lines().count(), 1);
    assert!(
        text.starts_with(r#"{"kind":"complete","fingerprint":""#),
        "{text}"
    );
}

#[test]
fn the_same_request_recorded_twice_is_served_in_recorded_order() {
    let path = cassette_path("retries");
    block_on(async {
        let overloaded =
            ProviderError::new(ProviderErrorKind::Overloaded, "scripted", "busy").with_status(503);
        let live = Cassette::new(&path)
            .wrap(ScriptedProvider::new([
                ScriptedReply::error(overloaded),
                ScriptedReply::text("fine"),
            ]))
            .unwrap();
        assert!(live.complete(&request("x")).await.is_err());
        assert_eq!(live.complete(&request("x")).await.unwrap().text, "fine");

        let replay = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .wrap(silent())
            .unwrap();
        let error = replay.complete(&request("x")).await.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Overloaded);
        assert_eq!(error.status(), Some(503));
        assert!(error.is_transient());
        assert_eq!(replay.complete(&request("x")).await.unwrap().text, "fine");
        // A third ask was never recorded.
        let error = replay.complete(&request("x")).await.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Configuration);
        assert!(!error.is_transient() && !error.request_sent());
        assert!(
            error
                .message()
                .contains("recorded 2 time(s) (exchange(s) 1, 2)"),
            "{error}"
        );
    });
}

#[test]
fn replay_only_names_the_nearest_exchange_and_what_differs() {
    let path = cassette_path("missing");
    block_on(async {
        let live = Cassette::new(&path)
            .wrap(ScriptedProvider::new(["a", "b"]))
            .unwrap();
        live.complete(&request("Summarize the first report"))
            .await
            .unwrap();
        let mut other = request("Something else entirely");
        other.model = Some("other-model".into());
        live.complete(&other).await.unwrap();

        let replay = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .wrap(silent())
            .unwrap();
        let error = replay
            .stream(&request("Summarize the second report"))
            .await
            .unwrap_err();
        let message = error.message();
        assert_eq!(error.kind(), ProviderErrorKind::Configuration);
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(
            message.contains("exchange 1 (line 1"),
            "the nearest is the same prompt but one word: {message}"
        );
        assert!(
            message.contains("method (recorded `complete`, asked `stream`)"),
            "{message}"
        );
        assert!(
            message.contains("prompt: turn 1 (user) differs from character 15"),
            "{message}"
        );
    });
}

#[test]
fn replay_only_of_a_missing_file_is_refused_when_wrapped() {
    let path = cassette_path("absent");
    let error = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(silent())
        .unwrap_err();
    assert!(matches!(error, CassetteError::Missing { .. }), "{error}");
}

#[test]
fn record_new_replays_what_it_has_and_appends_the_rest() {
    let path = cassette_path("new");
    block_on(async {
        let live = Cassette::new(&path)
            .wrap(ScriptedProvider::new(["old"]))
            .unwrap();
        live.complete(&request("a")).await.unwrap();
        let model = ScriptedProvider::new(["new"]);
        let more = Cassette::new(&path)
            .mode(CassetteMode::RecordNew)
            .wrap(model.clone())
            .unwrap();
        assert_eq!(more.complete(&request("a")).await.unwrap().text, "old");
        assert_eq!(more.complete(&request("b")).await.unwrap().text, "new");
        assert_eq!(model.request_count(), 1);
    });
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
}

#[test]
fn a_stream_is_recorded_as_its_pieces_and_replayed_as_a_stream() {
    let path = cassette_path("stream");
    block_on(async {
        let model = ScriptedProvider::new(["hello world, streamed"]).with_stream_chunks(5, None);
        let live = Cassette::new(&path).wrap(model).unwrap();
        let pieces: Vec<_> = live.stream(&request("s")).await.unwrap().collect().await;
        let replay = Cassette::new(&path).wrap(silent()).unwrap();
        let again: Vec<_> = replay.stream(&request("s")).await.unwrap().collect().await;
        let texts = |items: &[Result<ReplyPiece, ProviderError>]| -> Vec<String> {
            items
                .iter()
                .filter_map(|item| match item {
                    Ok(ReplyPiece::Text(text)) => Some(text.clone()),
                    _ => None,
                })
                .collect()
        };
        assert!(texts(&pieces).len() > 1);
        assert_eq!(texts(&pieces), texts(&again));
        match again.last() {
            Some(Ok(ReplyPiece::Finished(reply))) => {
                assert_eq!(reply.text, "hello world, streamed");
                assert!(reply.replayed);
            }
            other => panic!("expected the finished reply, got {other:?}"),
        }
    });
}

#[test]
fn a_last_line_cut_short_is_left_out_and_a_bad_line_is_an_error() {
    let path = cassette_path("cut");
    block_on(async {
        let live = Cassette::new(&path)
            .wrap(ScriptedProvider::new(["one"]))
            .unwrap();
        live.complete(&request("a")).await.unwrap();
    });
    let whole = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{whole}{}", &whole[..20])).unwrap();
    let replay = Cassette::new(&path).wrap(silent()).unwrap();
    assert_eq!(replay.unserved(), 1);
    std::fs::write(&path, format!("{whole}not json\n")).unwrap();
    let error = Cassette::new(&path).wrap(silent()).unwrap_err();
    assert!(
        error.to_string().contains("line 2 of the cassette"),
        "{error}"
    );
}

#[test]
fn secrets_in_prompts_and_replies_never_reach_the_file_and_still_match() {
    let path = cassette_path("secret");
    let sanitizer = Sanitizer::new().secret("hunter2-password").field("email");
    let ask = request(r#"Log in with hunter2-password as {"email": "ann@example.com"}"#);
    block_on(async {
        let live = Cassette::new(&path)
            .sanitizer(sanitizer.clone())
            .wrap(ScriptedProvider::new([
                r#"{"value": {"email": "ann@example.com", "token": "Bearer abc123"}}"#,
            ]))
            .unwrap();
        live.complete(&ask).await.unwrap();
        let replay = Cassette::new(&path)
            .sanitizer(sanitizer)
            .wrap(silent())
            .unwrap();
        let reply = replay.complete(&ask).await.unwrap();
        assert_eq!(
            reply.text,
            r#"{"value": {"email": "[redacted]", "token": "Bearer [redacted]"}}"#
        );
    });
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in ["hunter2", "ann@example.com", "abc123"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
}
