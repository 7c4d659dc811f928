use std::time::Duration;

use futures_util::StreamExt;

use super::breaker::{CooldownPolicy, LocalCooldowns};
use super::*;
use crate::provider::{ScriptedProvider, ScriptedReply};

fn failure(kind: ProviderErrorKind) -> ScriptedReply {
    ScriptedReply::error(ProviderError::new(
        kind,
        "scripted",
        format!("scripted {kind}"),
    ))
}

fn ask() -> ProviderRequest {
    ProviderRequest::text("system", "count the words")
}

#[tokio::test]
async fn each_provider_failure_moves_on_and_the_route_says_why() {
    for (kind, reason) in [
        (
            ProviderErrorKind::Authentication,
            SkipReason::Authentication,
        ),
        (ProviderErrorKind::Permission, SkipReason::Permission),
        (ProviderErrorKind::RateLimited, SkipReason::RateLimited),
        (ProviderErrorKind::Overloaded, SkipReason::Overloaded),
        (ProviderErrorKind::Server, SkipReason::Server),
        (ProviderErrorKind::Timeout, SkipReason::Timeout),
        (ProviderErrorKind::Transport, SkipReason::Transport),
    ] {
        let first = ScriptedProvider::new([failure(kind)]);
        let second = ScriptedProvider::new(["3"]).with_model("backup-model");
        let chain = FallbackProvider::new(Member::new(first.clone()).named("primary"))
            .then(Member::new(second.clone()).named("backup"));
        let reply = chain.complete(&ask()).await.unwrap();
        assert_eq!(reply.text, "3");
        let route = reply.route.unwrap();
        assert_eq!((route.provider.as_str(), route.position), ("backup", 1));
        assert_eq!(route.model, "backup-model");
        assert_eq!(route.skipped.len(), 1);
        assert_eq!(route.skipped[0].reason, reason, "{kind:?}");
        assert_eq!(route.skipped[0].provider, "primary");
        assert!(route.skipped[0].sent);
        assert_eq!((first.request_count(), second.request_count()), (1, 1));
    }
}

#[tokio::test]
async fn a_failure_of_the_request_itself_is_returned_without_moving_on() {
    for kind in [
        ProviderErrorKind::InvalidRequest,
        ProviderErrorKind::SchemaRejected,
        ProviderErrorKind::InvalidResponse,
    ] {
        let first = ScriptedProvider::new([failure(kind)]);
        let second = ScriptedProvider::new(["3"]);
        let chain = FallbackProvider::new(first).then(second.clone());
        let error = chain.complete(&ask()).await.unwrap_err();
        assert_eq!(error.kind(), kind);
        assert_eq!(second.request_count(), 0, "{kind:?}");
    }
}

#[tokio::test]
async fn when_every_member_fails_the_last_error_names_every_kind() {
    let chain = FallbackProvider::new(
        Member::new(ScriptedProvider::new([failure(
            ProviderErrorKind::RateLimited,
        )]))
        .named("a"),
    )
    .then(Member::new(ScriptedProvider::new([failure(ProviderErrorKind::Server)])).named("b"));
    let error = chain.complete(&ask()).await.unwrap_err();
    assert_eq!(error.kind(), ProviderErrorKind::Server);
    assert!(error.is_transient());
    let message = error.to_string();
    assert!(message.contains("a rate limited"), "{message}");
    assert!(message.contains("b server error"), "{message}");
    assert!(message.contains("scripted server error"), "{message}");
}

#[tokio::test]
async fn a_refusal_is_returned_unless_the_chain_falls_over_on_refusals() {
    let refusing = ScriptedProvider::new([ScriptedReply::refusal("no")]);
    let second = ScriptedProvider::new(["3"]);
    let chain = FallbackProvider::new(refusing).then(second.clone());
    let reply = chain.complete(&ask()).await.unwrap();
    assert!(reply.refusal.is_some());
    assert_eq!(reply.route.unwrap().position, 0);
    assert_eq!(second.request_count(), 0);

    let refusing = ScriptedProvider::new([ScriptedReply::refusal("no")]);
    let chain = FallbackProvider::new(refusing)
        .then(second.clone())
        .on_refusal(true);
    let reply = chain.complete(&ask()).await.unwrap();
    assert_eq!(reply.text, "3");
    let route = reply.route.unwrap();
    assert_eq!(route.skipped[0].reason, SkipReason::Refused);
    assert!(
        !route.skipped[0].detail.contains("no"),
        "a refusal's words are not kept"
    );
}

#[tokio::test]
async fn a_refusal_is_kept_when_the_members_after_it_fail() {
    let refusing = ScriptedProvider::new([ScriptedReply::refusal("no")]);
    let down = ScriptedProvider::new([failure(ProviderErrorKind::Overloaded)]);
    let chain = FallbackProvider::new(refusing).then(down).on_refusal(true);
    let reply = chain.complete(&ask()).await.unwrap();
    assert!(reply.refusal.is_some());
    let route = reply.route.unwrap();
    assert_eq!((route.position, route.skipped.len()), (0, 0));
}

#[tokio::test]
async fn a_member_that_failed_repeatedly_is_passed_over_until_its_probe() {
    let policy = CooldownPolicy {
        failures: 2,
        cooldown: Duration::from_millis(200),
        probe_timeout: Duration::from_secs(5),
    };
    let down = ScriptedProvider::from_fn(|_, index| match index {
        0..=1 => failure(ProviderErrorKind::Server),
        _ => ScriptedReply::text("from the first"),
    });
    let backup = ScriptedProvider::from_fn(|_, _| ScriptedReply::text("from the backup"));
    let chain = FallbackProvider::new(Member::new(down.clone()).named("down"))
        .then(backup.clone())
        .cooldown(policy);
    for _ in 0..5 {
        assert_eq!(
            chain.complete(&ask()).await.unwrap().text,
            "from the backup"
        );
    }
    assert_eq!(down.request_count(), 2, "asked until the breaker opened");
    let route = chain.complete(&ask()).await.unwrap().route.unwrap();
    assert_eq!(route.skipped[0].reason, SkipReason::CoolingDown);
    assert!(!route.skipped[0].sent);
    tokio::time::sleep(Duration::from_millis(250)).await;
    // Half-open: the probe answers and the breaker closes.
    assert_eq!(chain.complete(&ask()).await.unwrap().text, "from the first");
    assert_eq!(chain.complete(&ask()).await.unwrap().text, "from the first");
    assert_eq!(down.request_count(), 4);
}

#[tokio::test]
async fn when_every_member_cools_down_the_failure_says_when_to_come_back() {
    let policy = CooldownPolicy {
        failures: 1,
        cooldown: Duration::from_secs(60),
        probe_timeout: Duration::from_secs(5),
    };
    let store = LocalCooldowns::new();
    let only = ScriptedProvider::from_fn(|_, _| failure(ProviderErrorKind::Overloaded));
    let chain = FallbackProvider::new(only.clone())
        .cooldown(policy)
        .cooldowns(store.clone());
    let _ = chain.complete(&ask()).await.unwrap_err();
    let error = chain.complete(&ask()).await.unwrap_err();
    assert!(!error.request_sent());
    assert!(error.is_transient());
    assert!(
        error
            .retry_after()
            .is_some_and(|wait| wait > Duration::from_secs(50))
    );
    assert!(error.to_string().contains("cooling down"), "{error}");
    assert_eq!(only.request_count(), 1);
    // Another chain with the same store and member shares the cooldown.
    let other = FallbackProvider::new(only.clone())
        .cooldown(policy)
        .cooldowns(store);
    let _ = other.complete(&ask()).await.unwrap_err();
    assert_eq!(only.request_count(), 1);
}

#[tokio::test]
async fn escalation_moves_on_after_the_given_failed_attempts() {
    let first = ScriptedProvider::from_fn(|_, _| ScriptedReply::text("weak"));
    let second = ScriptedProvider::from_fn(|_, _| ScriptedReply::text("strong"));
    let chain = FallbackProvider::new(first.clone())
        .then(Member::new(second.clone()).model("big-model"))
        .escalate_after(2);
    let mut request = ask();
    let mut answers = Vec::new();
    for _ in 0..4 {
        let reply = chain.complete(&request).await.unwrap();
        answers.push(reply.text.clone());
        request
            .messages
            .push(crate::provider::Message::assistant(reply.text));
        request
            .messages
            .push(crate::provider::Message::user("wrong, again"));
    }
    assert_eq!(answers, ["weak", "weak", "strong", "strong"]);
    assert_eq!(second.requests()[0].model.as_deref(), Some("big-model"));
    let route = chain.complete(&request).await.unwrap().route.unwrap();
    assert_eq!(route.skipped[0].reason, SkipReason::Escalated);
}

#[tokio::test]
async fn the_calls_model_goes_to_the_first_member_only() {
    let first = ScriptedProvider::new([failure(ProviderErrorKind::Server)]);
    let second = ScriptedProvider::new(["3"]);
    let chain = FallbackProvider::new(first.clone()).then(second.clone());
    let mut request = ask();
    request.model = Some("first-catalogue-model".to_owned());
    chain.complete(&request).await.unwrap();
    assert_eq!(
        first.requests()[0].model.as_deref(),
        Some("first-catalogue-model")
    );
    assert_eq!(second.requests()[0].model, None);
}

async fn collect(stream: ReplyStream) -> (String, Option<Result<ProviderReply, ProviderError>>) {
    let mut text = String::new();
    let mut end = None;
    let mut stream = stream;
    while let Some(piece) = stream.next().await {
        match piece {
            Ok(ReplyPiece::Text(piece)) => text.push_str(&piece),
            Ok(ReplyPiece::Finished(reply)) => end = Some(Ok(reply)),
            Err(error) => end = Some(Err(error)),
        }
    }
    (text, end)
}

#[tokio::test]
async fn a_stream_falls_over_before_its_first_piece_only() {
    // Failing when it opens: the backup streams the reply, and the route rides on it.
    let first = ScriptedProvider::new([failure(ProviderErrorKind::Overloaded)]);
    let second = ScriptedProvider::new(["{\"value\": 3}"]).with_stream_chunks(4, None);
    let chain = FallbackProvider::new(first).then(second.clone());
    let (text, end) = collect(chain.stream(&ask()).await.unwrap()).await;
    assert_eq!(text, "{\"value\": 3}");
    assert_eq!(end.unwrap().unwrap().route.unwrap().position, 1);

    // Failing after text was delivered: the failure ends the stream, nothing moves on.
    let cut = ProviderError::new(ProviderErrorKind::Transport, "scripted", "reset");
    let first = ScriptedProvider::new([ScriptedReply::fail_after("{\"val", cut)])
        .with_stream_chunks(4, None);
    let second = ScriptedProvider::new(["{\"value\": 3}"]);
    let chain = FallbackProvider::new(first).then(second.clone());
    let (text, end) = collect(chain.stream(&ask()).await.unwrap()).await;
    assert_eq!(text, "{\"val");
    assert_eq!(
        end.unwrap().unwrap_err().kind(),
        ProviderErrorKind::Transport
    );
    assert_eq!(second.request_count(), 0);
}

#[test]
fn the_chain_enforces_the_schema_and_reports_logprobs_only_as_far_as_every_member_does() {
    let strict = ScriptedProvider::new(Vec::<String>::new()).with_schema_enforced(true);
    let loose = ScriptedProvider::new(Vec::<String>::new());
    let mut request = ask();
    request.schema = Some(std::sync::Arc::new(serde_json::json!({"type": "object"})));
    request.response_format = crate::provider::ResponseFormat::JsonSchema;
    assert!(
        FallbackProvider::new(strict.clone())
            .then(strict.clone())
            .enforces_schema(&request)
    );
    assert!(
        !FallbackProvider::new(strict.clone())
            .then(loose)
            .enforces_schema(&request)
    );
    let five = ScriptedProvider::new(Vec::<String>::new()).with_max_top_logprobs(Some(5));
    let two = ScriptedProvider::new(Vec::<String>::new()).with_max_top_logprobs(Some(2));
    assert_eq!(
        FallbackProvider::new(five.clone())
            .then(two)
            .max_top_logprobs(),
        Some(2)
    );
    assert_eq!(
        FallbackProvider::new(five).then(strict).max_top_logprobs(),
        None
    );
}

#[test]
fn members_of_the_same_name_are_kept_apart() {
    let chain = FallbackProvider::new(ScriptedProvider::new(Vec::<String>::new()))
        .then(ScriptedProvider::new(Vec::<String>::new()))
        .then(Member::new(ScriptedProvider::new(Vec::<String>::new())).model("m"));
    assert_eq!(
        chain.member_names(),
        [
            "scripted/scripted-model",
            "scripted/scripted-model#2",
            "scripted/m"
        ]
    );
}

#[tokio::test]
async fn the_kinds_that_move_on_are_the_ones_the_chain_is_given() {
    // Added: a model the first member lacks moves on, named as such in the route.
    let first = ScriptedProvider::new([failure(ProviderErrorKind::NotFound)]);
    let second = ScriptedProvider::new(["3"]);
    let chain = FallbackProvider::new(Member::new(first.clone()).named("primary"))
        .then(second.clone())
        .with_fall_over_on(
            DEFAULT_FALL_OVER_ON
                .into_iter()
                .chain([ProviderErrorKind::NotFound]),
        );
    let route = chain.complete(&ask()).await.unwrap().route.unwrap();
    assert_eq!(route.position, 1);
    assert_eq!(route.skipped[0].reason, SkipReason::NotFound);
    assert_eq!((first.request_count(), second.request_count()), (1, 1));

    // Taken away: an authentication failure is returned, the next member never asked.
    let first = ScriptedProvider::new([failure(ProviderErrorKind::Authentication)]);
    let second = ScriptedProvider::new(["3"]);
    let chain = FallbackProvider::new(first)
        .then(second.clone())
        .with_fall_over_on([ProviderErrorKind::Overloaded, ProviderErrorKind::Canceled]);
    let error = chain.complete(&ask()).await.unwrap_err();
    assert_eq!(error.kind(), ProviderErrorKind::Authentication);
    assert_eq!(second.request_count(), 0);
    // `Canceled` is never taken: the caller stopped the call.
    assert!(!chain.inner.falls_over(ProviderErrorKind::Canceled));
    assert!(chain.inner.falls_over(ProviderErrorKind::Overloaded));

    // The default is the provider's own failures.
    let chain = FallbackProvider::new(ScriptedProvider::new(["3"]));
    for kind in ProviderErrorKind::ALL {
        assert_eq!(
            chain.inner.falls_over(kind),
            DEFAULT_FALL_OVER_ON.contains(&kind),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn the_kinds_also_decide_what_moves_a_stream_on() {
    let first = ScriptedProvider::new([failure(ProviderErrorKind::InvalidResponse)]);
    let second = ScriptedProvider::new(["{\"value\": 3}"]).with_stream_chunks(4, None);
    let chain = FallbackProvider::new(first)
        .then(second.clone())
        .with_fall_over_on([ProviderErrorKind::InvalidResponse]);
    let (text, end) = collect(chain.stream(&ask()).await.unwrap()).await;
    assert_eq!(text, "{\"value\": 3}");
    let route = end.unwrap().unwrap().route.unwrap();
    assert_eq!(route.skipped[0].reason, SkipReason::InvalidResponse);
}

#[tokio::test]
async fn a_stream_that_breaks_after_its_first_piece_counts_towards_the_cooldown() {
    let policy = CooldownPolicy {
        failures: 2,
        cooldown: Duration::from_secs(60),
        probe_timeout: Duration::from_secs(5),
    };
    let cut = || ProviderError::new(ProviderErrorKind::Transport, "scripted", "reset");
    let breaking =
        ScriptedProvider::from_fn(move |_, _| ScriptedReply::fail_after("{\"val", cut()))
            .with_stream_chunks(4, None);
    let backup = ScriptedProvider::from_fn(|_, _| ScriptedReply::text("{\"value\": 3}"))
        .with_stream_chunks(4, None);
    let chain = FallbackProvider::new(Member::new(breaking.clone()).named("breaking"))
        .then(backup.clone())
        .cooldown(policy);
    for _ in 0..2 {
        // Text was delivered: the failure ends the stream, nothing moves on...
        let (text, end) = collect(chain.stream(&ask()).await.unwrap()).await;
        assert_eq!(text, "{\"val");
        assert_eq!(
            end.unwrap().unwrap_err().kind(),
            ProviderErrorKind::Transport
        );
    }
    assert_eq!(backup.request_count(), 0);
    // ...but each break counted: after two, the member is cooling down.
    let (text, end) = collect(chain.stream(&ask()).await.unwrap()).await;
    assert_eq!(text, "{\"value\": 3}");
    let route = end.unwrap().unwrap().route.unwrap();
    assert_eq!(route.skipped[0].reason, SkipReason::CoolingDown);
    assert_eq!((breaking.request_count(), backup.request_count()), (2, 1));

    // A break of a kind that does not move on (the reply unreadable) does not count.
    let unreadable =
        || ProviderError::new(ProviderErrorKind::InvalidResponse, "scripted", "garbled");
    let garbling =
        ScriptedProvider::from_fn(move |_, _| ScriptedReply::fail_after("{\"val", unreadable()))
            .with_stream_chunks(4, None);
    let chain = FallbackProvider::new(garbling.clone())
        .then(backup.clone())
        .cooldown(policy);
    for _ in 0..3 {
        let (text, _) = collect(chain.stream(&ask()).await.unwrap()).await;
        assert_eq!(text, "{\"val");
    }
    assert_eq!(garbling.request_count(), 3, "never cooled down");
}
