//! Shared test types and helpers for the integration tests.
#![allow(dead_code)]

use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{IntentClient, IntentClientBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct Person {
    pub name: String,
    pub age: u32,
    pub nickname: Option<String>,
}

/// A client over a scripted provider, plus a handle to read the requests it sent.
pub fn scripted<R: Into<ScriptedReply>>(
    replies: impl IntoIterator<Item = R>,
) -> (IntentClient, ScriptedProvider) {
    let provider = ScriptedProvider::new(replies);
    let client = IntentClient::builder()
        .provider(provider.clone())
        .build()
        .expect("client");
    (client, provider)
}

/// Like [`scripted`], with the builder open for more settings.
pub fn scripted_with<R: Into<ScriptedReply>>(
    replies: impl IntoIterator<Item = R>,
    configure: impl FnOnce(IntentClientBuilder) -> IntentClientBuilder,
) -> (IntentClient, ScriptedProvider) {
    let provider = ScriptedProvider::new(replies);
    let client = configure(IntentClient::builder().provider(provider.clone()))
        .build()
        .expect("client");
    (client, provider)
}
