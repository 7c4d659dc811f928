//! One Chat Completions endpoint: the connection it sends through and the send path of
//! a live and a streamed call, shared by [`OpenAi`](super::OpenAi),
//! [`OpenAiCompatible`](crate::provider::OpenAiCompatible) and the batch adapter.

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::reply::{REQUEST_ID_HEADER, classify, parse_reply, prompt_filter_refusal};
use super::request::{ChatBody, StructuredOutput, WireSettings};
use super::stream::ChatStream;
use crate::media::MediaLimits;
use crate::provider::ReplyStream;
use crate::provider::http::{self, Connection, RawResponse, Route, WireApi};
use crate::provider::{ProviderError, ProviderReply, ProviderRequest, ResponseFormat};

/// Chat Completions as the send path sees it.
pub(crate) const CHAT_COMPLETIONS: WireApi = WireApi {
    call: "chat completion",
    request_id_header: REQUEST_ID_HEADER,
    classify,
};

/// Which header carries a Chat Completions server's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyHeader {
    /// `authorization: Bearer {key}` (OpenAI, most servers, Azure's Entra ID tokens).
    Bearer,
    /// `api-key: {key}` (Azure OpenAI's keys).
    ApiKey,
}

/// Where on its server a Chat Completions endpoint is, and how the key is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChatAddress {
    /// Appended to the base URL: `/chat/completions`, or a deployment's path with its
    /// `api-version` query.
    pub(crate) path: String,
    /// The header the key goes in.
    pub(crate) key_header: KeyHeader,
    /// The `url` a batch line names (`/v1/chat/completions` on OpenAI).
    pub(crate) batch_line_url: &'static str,
}

impl ChatAddress {
    /// OpenAI's own: `{base}/chat/completions` with a bearer key.
    pub(crate) fn openai() -> Self {
        Self {
            path: "/chat/completions".to_owned(),
            key_header: KeyHeader::Bearer,
            batch_line_url: "/v1/chat/completions",
        }
    }
}

/// One Chat Completions endpoint: its connection and what it sends.
#[derive(Clone, Debug)]
pub(crate) struct ChatEndpoint {
    pub(crate) connection: Connection,
    pub(crate) address: ChatAddress,
    pub(crate) settings: WireSettings,
    pub(crate) extra_body: Map<String, Value>,
}

impl ChatEndpoint {
    /// An endpoint at `base_url`.
    pub(crate) fn new(
        provider_name: &str,
        base_url: &str,
        model: String,
        api_key: Option<String>,
        media_limits: MediaLimits,
    ) -> Self {
        Self {
            connection: Connection::new(provider_name, base_url, model, api_key, media_limits),
            address: ChatAddress::openai(),
            settings: WireSettings::OPENAI,
            extra_body: Map::new(),
        }
    }

    /// The endpoint's URL and key header, built on the first call.
    fn route(&self) -> Result<&Route, ProviderError> {
        self.connection.route(|connection| {
            let mut headers = Vec::with_capacity(1);
            if let Some(key) = connection.secret() {
                headers.push(match self.address.key_header {
                    KeyHeader::Bearer => Route::secret_header(
                        &connection.provider,
                        "authorization",
                        &format!("Bearer {key}"),
                    )?,
                    KeyHeader::ApiKey => {
                        Route::secret_header(&connection.provider, "api-key", key)?
                    }
                });
            }
            let url = format!("{}{}", connection.base_url(), self.address.path);
            Route::new(&connection.provider, &url, headers)
        })
    }

    /// Sends to another address on the server (the route is built again).
    pub(crate) fn set_address(&mut self, address: ChatAddress) {
        self.address = address;
        self.connection.reset_route();
    }

    /// The most `top_logprobs` this endpoint reports per token
    /// ([`Provider::max_top_logprobs`](crate::provider::Provider::max_top_logprobs)).
    pub(crate) fn max_top_logprobs(&self) -> Option<u8> {
        self.settings.max_top_logprobs
    }

    /// Whether `request` goes out as a strict `json_schema` the model reads
    /// ([`Provider::enforces_schema`](crate::provider::Provider::enforces_schema)).
    pub(crate) fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        request.response_format == ResponseFormat::JsonSchema
            && request.schema.is_some()
            && self.settings.structured_output == StructuredOutput::JsonSchema
            && self.settings.model_reads_schema
    }

    /// The body of `request`, as a live call sends it and as a batch line carries it;
    /// `schema` is `http::schema_json` of the request's schema. A request whose media the
    /// server does not take ([`MediaLimits`]) is refused here, before anything is sent.
    pub(crate) fn body<'a>(
        &'a self,
        request: &'a ProviderRequest,
        schema: Option<&'a RawValue>,
    ) -> Result<ChatBody<'a>, ProviderError> {
        self.connection.check_media(request)?;
        Ok(ChatBody {
            request,
            model: self.connection.model_of(request),
            settings: &self.settings,
            extra: &self.extra_body,
            schema,
            stream: false,
        })
    }

    /// The `authorization` header (when the endpoint has a key), marked sensitive.
    pub(crate) fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        Ok(self.route()?.headers().to_vec())
    }

    /// Sends one request and reads the reply.
    pub(crate) async fn complete(
        &self,
        request: &ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        let model = self.connection.model_of(request);
        let route = self.route()?;
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = self.body(request, schema.as_deref())?;
        let raw = self
            .connection
            .send(route, &body, body.size_hint(), &CHAT_COMPLETIONS, model)
            .await?;
        if !raw.status.is_success() {
            return self.refusal_or_error(&raw, model);
        }
        parse_reply(
            &self.connection.provider,
            &raw,
            model,
            self.connection.secret(),
        )
    }

    /// Sends one request with `"stream": true` and reads the chunks as they arrive.
    pub(crate) async fn stream(
        &self,
        request: &ProviderRequest,
    ) -> Result<ReplyStream, ProviderError> {
        let model = self.connection.model_of(request);
        let route = self.route()?;
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = ChatBody {
            stream: true,
            ..self.body(request, schema.as_deref())?
        };
        let connection = &self.connection;
        let response = connection
            .open_stream(route, &body, body.size_hint(), &CHAT_COMPLETIONS, model)
            .await?;
        match response {
            Ok(response) => Ok(connection.decode_stream(response, &CHAT_COMPLETIONS, |id| {
                ChatStream::new(&connection.provider, model, id, connection.secret())
            })),
            Err(raw) => self.refusal_or_error(&raw, model).map(ReplyStream::whole),
        }
    }

    /// What an error reply means: a refusal when the content filter blocked the prompt
    /// (the same prompt would be blocked again), else the classified error.
    fn refusal_or_error(
        &self,
        raw: &RawResponse,
        model: &str,
    ) -> Result<ProviderReply, ProviderError> {
        match prompt_filter_refusal(raw, self.connection.secret()) {
            Some(refusal) => Ok(ProviderReply {
                refusal: Some(refusal),
                stop_reason: Some("content_filter".to_owned()),
                model: model.to_owned(),
                request_id: raw.request_id(REQUEST_ID_HEADER).map(str::to_owned),
                ..ProviderReply::default()
            }),
            None => Err(self.error_reply(raw)),
        }
    }

    /// The classified error of a reply with an error status (a live call's, or a batch
    /// line's).
    pub(crate) fn error_reply(&self, raw: &RawResponse) -> ProviderError {
        self.connection.error_reply(raw, &CHAT_COMPLETIONS)
    }
}
