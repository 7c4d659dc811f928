//! A provider written outside the runtime, with nothing but `intent-rs` (this crate
//! has no `async-trait` dependency of its own), and what the record says about it.

use std::sync::{Arc, Mutex};

use intent_rs::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use intent_rs::{IntentClient, IntentOptions, async_trait};

/// A provider whose replies name no model, as some gateways' do; it records the model
/// each request asked for.
#[derive(Debug, Default)]
struct Anonymous {
    asked: Mutex<Vec<Option<String>>>,
}

#[async_trait]
impl Provider for Anonymous {
    fn name(&self) -> &str {
        "anonymous"
    }

    fn default_model(&self) -> &str {
        "house-model"
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        self.asked.lock().unwrap().push(request.model.clone());
        Ok(ProviderReply::text(r#"{"value": 3}"#))
    }
}

#[tokio::test]
async fn a_custom_provider_needs_only_the_re_exported_async_trait() {
    let provider = Arc::new(Anonymous::default());
    let client = IntentClient::builder()
        .shared_provider(provider.clone())
        .build()
        .unwrap();
    let result = client
        .transform(
            "one two three",
            "Count the words",
            IntentOptions::<u32>::new(),
        )
        .await;
    assert_eq!(result.value, Some(3));
    assert_eq!(provider.asked.lock().unwrap().as_slice(), [None]);
}

#[tokio::test]
async fn the_record_names_the_requested_model_when_the_reply_names_none() {
    let client = IntentClient::builder()
        .provider(Anonymous::default())
        .build()
        .unwrap();
    let by_default = client
        .transform(
            "one two three",
            "Count the words",
            IntentOptions::<u32>::new(),
        )
        .await;
    assert_eq!(by_default.attempts[0].model, "house-model");

    let named = client
        .transform(
            "one two three",
            "Count the words",
            IntentOptions::<u32>::new().model("gpt-test"),
        )
        .await;
    assert_eq!(named.attempts[0].model, "gpt-test");
}
