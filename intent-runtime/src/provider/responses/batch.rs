//! OpenAI's Batch API for `/v1/responses`: the adapter Chat Completions batches use
//! ([`OpenAiBatch`]), each line asking for `/v1/responses` with a live call's body, each
//! output line's `response.body` a Response object read as a live reply is.

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::value::RawValue;

use super::OpenAiResponses;
use super::request::ResponsesBody;
use crate::provider::batch::BatchProvider;
use crate::provider::http::{Connection, RawResponse};
use crate::provider::openai::batch::{BatchEndpoint, OpenAiBatch};
use crate::provider::{ProviderError, ProviderReply, ProviderRequest};

impl BatchProvider {
    /// OpenAI's Batch API for `/v1/responses` (`/v1/files`, `/v1/batches`) with this
    /// provider's key, base URL, model, `store` setting and HTTP settings.
    pub fn openai_responses(provider: OpenAiResponses) -> Self {
        Self::from_api(OpenAiBatch::new(provider))
    }
}

impl BatchEndpoint for OpenAiResponses {
    type Body<'a> = ResponsesBody<'a>;

    fn connection(&self) -> &Connection {
        OpenAiResponses::connection(self)
    }

    fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        OpenAiResponses::auth_headers(self)
    }

    fn line_url(&self) -> &'static str {
        "/v1/responses"
    }

    fn line_body<'a>(
        &'a self,
        request: &'a ProviderRequest,
        schema: Option<&'a RawValue>,
    ) -> Result<ResponsesBody<'a>, ProviderError> {
        self.body(request, schema, false)
    }

    fn body_size_hint(body: &ResponsesBody<'_>) -> usize {
        body.size_hint()
    }

    fn parse_result(&self, raw: &RawResponse) -> Result<ProviderReply, ProviderError> {
        self.parse_reply(raw, "")
    }

    fn error_reply(&self, raw: &RawResponse) -> ProviderError {
        OpenAiResponses::error_reply(self, raw)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::provider::ProviderErrorKind;
    use crate::provider::batch::BatchApi;
    use crate::provider::openai::batch::OutputLine;

    fn batch() -> OpenAiBatch<OpenAiResponses> {
        OpenAiBatch::new(OpenAiResponses::new("sk-secret").with_model("gpt-test"))
    }

    #[tokio::test]
    async fn a_line_asks_for_v1_responses_with_the_live_body() {
        let request = ProviderRequest::text("sys", "hi");
        let line = batch().line("item-0-0", &request).await.unwrap();
        let line: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            line,
            json!({"custom_id": "item-0-0", "method": "POST", "url": "/v1/responses",
                "body": {"model": "gpt-test", "instructions": "sys",
                    "input": [{"role": "user", "content": "hi"}], "store": false}})
        );
    }

    #[test]
    fn output_lines_are_read_as_live_replies_and_errors() {
        let line: OutputLine = serde_json::from_value(json!({
            "id": "batch_req_1", "custom_id": "item-1-0",
            "response": {"status_code": 200, "request_id": "req_1", "body": {
                "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-test-1",
                "output": [{"type": "message", "content": [{"type": "output_text", "text": "{\"value\": 3}"}]}],
                "usage": {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0}}}},
            "error": null
        }))
        .unwrap();
        let (id, outcome) = batch().outcome(line);
        assert_eq!(id, "item-1-0");
        let reply = outcome.unwrap();
        assert_eq!(reply.text, "{\"value\": 3}");
        assert_eq!(reply.request_id.as_deref(), Some("req_1"));
        assert_eq!(reply.response_id.as_deref(), Some("resp_1"));
        let line: OutputLine = serde_json::from_value(json!({
            "custom_id": "item-2-0",
            "response": {"status_code": 400, "request_id": "req_2", "body": {"error": {
                "message": "Invalid schema for response_format 'x'", "type": "invalid_request_error",
                "param": "text.format.schema", "code": null}}},
            "error": null
        }))
        .unwrap();
        let error = batch().outcome(line).1.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::SchemaRejected);
        assert_eq!(error.request_id(), Some("req_2"));
        let line: OutputLine = serde_json::from_value(json!({
            "custom_id": "item-3-0", "response": null,
            "error": {"code": "batch_expired", "message": "expired (sk-secret)"}
        }))
        .unwrap();
        let error = batch().outcome(line).1.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Timeout);
        assert!(!error.message().contains("sk-secret"));
    }
}
