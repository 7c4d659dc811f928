//! An offline batch API for tests and examples: each request is answered by a
//! [`ScriptedProvider`] (or another offline provider, such as the test model) as it is
//! queued, and each batch ends on its second look.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use futures_util::StreamExt;

use super::ScriptedProvider;
use crate::provider::batch::outcome::StoredOutcome;
use crate::provider::batch::{BatchApi, BatchLimits, BatchProvider, BatchState, Input, Sink};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderRequest};

#[derive(Debug)]
pub(crate) struct ScriptedBatch {
    provider: Arc<dyn Provider>,
    batches: Mutex<HashMap<String, Stored>>,
    next: AtomicU64,
}

#[derive(Debug)]
struct Stored {
    lines: Vec<Vec<u8>>,
    looks: u32,
    canceled: bool,
}

#[derive(Serialize, Deserialize)]
struct Line {
    custom_id: String,
    outcome: StoredOutcome,
}

impl ScriptedBatch {
    pub(crate) fn new(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            batches: Mutex::default(),
            next: AtomicU64::new(1),
        }
    }

    fn unknown(id: &str) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::NotFound,
            "scripted",
            format!("no batch {id}"),
        )
    }
}

#[async_trait::async_trait]
impl BatchApi for ScriptedBatch {
    fn name(&self) -> &str {
        self.provider.name()
    }

    fn limits(&self) -> BatchLimits {
        BatchLimits {
            max_requests: 50_000,
            max_bytes: 200 * 1024 * 1024,
        }
    }

    fn model_of(&self, request: &ProviderRequest) -> String {
        request
            .model
            .clone()
            .unwrap_or_else(|| self.provider.default_model().to_owned())
    }

    async fn line(
        &self,
        custom_id: &str,
        request: &ProviderRequest,
    ) -> Result<Vec<u8>, ProviderError> {
        let outcome = self.provider.complete(request).await;
        let line = Line {
            custom_id: custom_id.to_owned(),
            outcome: StoredOutcome::of(&outcome),
        };
        serde_json::to_vec(&line).map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                "scripted",
                error.to_string(),
            )
        })
    }

    async fn submit(
        &self,
        _model: &str,
        input: &Input,
        _tag: &str,
    ) -> Result<String, ProviderError> {
        // An offline fake: it keeps what it is sent, as a provider does.
        let mut chunks = input.stream("scripted", None).await?;
        let mut bytes = Vec::new();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|error| {
                ProviderError::new(
                    ProviderErrorKind::Configuration,
                    "scripted",
                    error.to_string(),
                )
                .not_sent()
            })?;
            bytes.extend_from_slice(&chunk);
        }
        let lines = bytes
            .split(|&byte| byte == b'\n')
            .filter(|line| !line.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let id = format!(
            "scripted_batch_{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let stored = Stored {
            lines,
            looks: 0,
            canceled: false,
        };
        self.batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), stored);
        Ok(id)
    }

    async fn state(&self, id: &str) -> Result<BatchState, ProviderError> {
        let mut batches = self.batches.lock().unwrap_or_else(PoisonError::into_inner);
        let stored = batches.get_mut(id).ok_or_else(|| Self::unknown(id))?;
        stored.looks += 1;
        if stored.looks < 2 && !stored.canceled {
            return Ok(BatchState::Running);
        }
        Ok(BatchState::Ended {
            handles: Vec::new(),
            missing: (
                ProviderErrorKind::Canceled,
                "the batch was canceled before this request was answered".to_owned(),
            ),
        })
    }

    async fn results(
        &self,
        id: &str,
        _handles: &[String],
        sink: &mut Sink<'_>,
    ) -> Result<(), ProviderError> {
        let (lines, canceled) = {
            let batches = self.batches.lock().unwrap_or_else(PoisonError::into_inner);
            let stored = batches.get(id).ok_or_else(|| Self::unknown(id))?;
            (stored.lines.clone(), stored.canceled)
        };
        // A canceled scripted batch answers nothing: every item is reported canceled.
        if canceled {
            return Ok(());
        }
        for line in lines {
            if let Ok(line) = serde_json::from_slice::<Line>(&line) {
                sink(&line.custom_id, line.outcome.into_outcome());
            }
        }
        Ok(())
    }

    async fn cancel(&self, id: &str) -> Result<(), ProviderError> {
        let mut batches = self.batches.lock().unwrap_or_else(PoisonError::into_inner);
        let stored = batches.get_mut(id).ok_or_else(|| Self::unknown(id))?;
        stored.canceled = true;
        Ok(())
    }
}

impl BatchProvider {
    /// An offline batch API whose replies come from `provider`: each request is answered
    /// as it is queued, and each batch ends on its second look. For tests and examples.
    pub fn scripted(provider: ScriptedProvider) -> Self {
        offline_batch(Arc::new(provider))
    }
}

/// The offline batch API of [`BatchProvider::scripted`], answering with any provider that
/// needs no network (the test model).
pub(crate) fn offline_batch(provider: Arc<dyn Provider>) -> BatchProvider {
    BatchProvider::from_api(ScriptedBatch::new(provider))
}
