//! The Redis connection the fleet's limiter and cache share: one lazily opened,
//! self-reconnecting connection, a time limit on every call, and what to do when Redis
//! fails.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::OnceCell;

use crate::result::Cause;

/// The default time limit of one Redis call.
pub const DEFAULT_REDIS_TIMEOUT: Duration = Duration::from_millis(250);

/// How long Redis is not asked again after a call failed: while it is down, each call
/// would otherwise pay the connection attempt (and its retries) before falling back.
pub const REDIS_RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// What the limiter and the cache do when Redis does not answer in time or fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnRedisFailure {
    /// Carry on without Redis: the limiter admits through a local limiter with the same
    /// quota (so while Redis is down each replica alone may use the whole quota), the
    /// cache serves nothing and stores nothing. Each fallback is a `tracing` warning.
    #[default]
    FailOpen,
    /// The limiter refuses: the call fails with an error saying that Redis is unavailable
    /// (nothing is sent to the provider). The cache still fails open: a missing cache
    /// entry costs a model call, never a wrong answer.
    FailClosed,
}

crate::failure::debug_as_message!(RedisError);

/// Why a Redis call failed.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedisError {
    /// The URL asks for TLS (`rediss://`), which this build's Redis client does not speak.
    #[error(
        "`{url}` asks for TLS (rediss://), which intent-rs's Redis client is not built with; \
         reach Redis over redis:// on a private network, or through a TLS tunnel (stunnel, a \
         sidecar proxy) listening on a local redis:// address"
    )]
    TlsNotBuiltIn {
        /// The URL, without its password.
        url: String,
    },
    /// The URL is not a Redis URL.
    #[error("`{url}` is not a Redis URL ({reason}); write it as redis://host:port/db")]
    InvalidUrl {
        /// The URL, without its password.
        url: String,
        /// What the client said.
        reason: String,
    },
    /// Redis did not answer within the time limit.
    #[error(
        "Redis did not answer within {0:?}; check that it is running and reachable, or raise `Redis::with_timeout`"
    )]
    Timeout(Duration),
    /// Redis refused the command or the connection failed (the source is the Redis
    /// client's error).
    #[error("Redis failed: {0}")]
    Failed(#[source] Cause),
}

/// A Redis server shared by the replicas of a fleet: cheap to clone, connected on first use.
#[derive(Clone)]
pub struct Redis {
    inner: Arc<Inner>,
}

struct Inner {
    client: redis::Client,
    /// The URL without its password, for messages.
    shown_url: String,
    settings: Settings,
    connection: OnceCell<ConnectionManager>,
    /// The last failure and when Redis may be asked again.
    failed: std::sync::Mutex<Option<(Instant, RedisError)>>,
}

#[derive(Clone)]
struct Settings {
    timeout: Duration,
    on_failure: OnRedisFailure,
    namespace: String,
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis")
            .field("url", &self.inner.shown_url)
            .field("timeout", &self.inner.settings.timeout)
            .field("on_failure", &self.inner.settings.on_failure)
            .field("namespace", &self.inner.settings.namespace)
            .finish()
    }
}

impl Redis {
    /// A Redis server at `url` (`redis://host:port/db`, `rediss://` for TLS is not built
    /// in), with a time limit of [`DEFAULT_REDIS_TIMEOUT`] per call, failing open. Nothing
    /// is connected until the first call.
    pub fn new(url: &str) -> Result<Self, RedisError> {
        let shown_url = without_password(url);
        if url
            .trim_start()
            .get(..9)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("rediss://"))
        {
            return Err(RedisError::TlsNotBuiltIn { url: shown_url });
        }
        let client = redis::Client::open(url).map_err(|error| RedisError::InvalidUrl {
            url: shown_url.clone(),
            reason: error.to_string(),
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                shown_url,
                settings: Settings {
                    timeout: DEFAULT_REDIS_TIMEOUT,
                    on_failure: OnRedisFailure::FailOpen,
                    namespace: "intent-rs".to_owned(),
                },
                connection: OnceCell::new(),
                failed: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The time limit of one Redis call (connecting included). After a failure Redis is
    /// not asked again for [`REDIS_RETRY_AFTER_FAILURE`]: calls fall back at once.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        self.with(|settings| settings.timeout = timeout)
    }

    /// What to do when Redis fails or is slow.
    pub fn with_on_failure(self, on_failure: OnRedisFailure) -> Self {
        self.with(|settings| settings.on_failure = on_failure)
    }

    /// The prefix of every key written (default `intent-rs`), to keep several fleets apart
    /// in one Redis.
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        self.with(|settings| settings.namespace = namespace)
    }

    /// A copy with changed settings; it connects anew on first use.
    fn with(self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = self.inner.settings.clone();
        change(&mut settings);
        Self {
            inner: Arc::new(Inner {
                client: self.inner.client.clone(),
                shown_url: self.inner.shown_url.clone(),
                settings,
                connection: OnceCell::new(),
                failed: std::sync::Mutex::new(None),
            }),
        }
    }

    /// The configured failure behaviour.
    pub(crate) fn failure_behaviour(&self) -> OnRedisFailure {
        self.inner.settings.on_failure
    }

    /// `{namespace}:{kind}:{name}`.
    pub(crate) fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{name}", self.inner.settings.namespace)
    }

    /// Runs `command` on the shared connection within the time limit (connecting first if
    /// needed). A connection that cannot be made is tried again on the next call.
    ///
    /// A connection Redis dropped (a restart, `CLIENT KILL`, an idle timeout) fails the
    /// first command sent on it, and the manager reconnects only then: that command is
    /// sent once more, on the new connection and within the same time limit, before the
    /// failure counts. A command lost with its connection may therefore run twice; an
    /// admission then books one request twice, erring on the quota's safe side.
    pub(crate) async fn run<T, F, Fut>(&self, command: F) -> Result<T, RedisError>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        if let Some(error) = self.recent_failure() {
            return Err(error);
        }
        let timeout = self.inner.settings.timeout;
        let attempt = async {
            let connection = self
                .inner
                .connection
                .get_or_try_init(|| async {
                    // Retries inside the manager stay within one call's time limit; a
                    // later call reconnects again.
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(timeout))
                        .set_response_timeout(Some(timeout))
                        .set_number_of_retries(1)
                        .set_max_delay(timeout);
                    ConnectionManager::new_with_config(self.inner.client.clone(), config).await
                })
                .await?
                .clone();
            match command(connection.clone()).await {
                Err(error) if connection_dropped(&error) => {
                    tracing::debug!(%error, "the Redis connection was dropped; sending the command again on a new one");
                    command(connection).await
                }
                result => result,
            }
        };
        let error = match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => failure(&error, timeout),
            Err(_) => RedisError::Timeout(timeout),
        };
        *self.failures() = Some((Instant::now() + REDIS_RETRY_AFTER_FAILURE, error.clone()));
        Err(error)
    }

    /// The last failure, while Redis is not to be asked again.
    fn recent_failure(&self) -> Option<RedisError> {
        let mut failed = self.failures();
        match &*failed {
            Some((until, error)) if Instant::now() < *until => Some(error.clone()),
            Some(_) => {
                *failed = None;
                None
            }
            None => None,
        }
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, Option<(Instant, RedisError)>> {
        // A poisoned lock only means a panic elsewhere mid-write; the value is still usable.
        self.inner
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The failure `error` is, under the time limit `limit`: redis-rs's own connection and
/// response timeouts (set to the same limit) may fire before the call's, and are the same
/// failure, with the same advice.
fn failure(error: &redis::RedisError, limit: Duration) -> RedisError {
    if error.is_timeout() {
        RedisError::Timeout(limit)
    } else {
        RedisError::Failed(Cause::new(error.clone()))
    }
}

/// Whether `error` says the connection is gone (the manager reconnects on it), rather
/// than that Redis refused the command or was slow.
fn connection_dropped(error: &redis::RedisError) -> bool {
    !error.is_timeout() && (error.is_connection_dropped() || error.is_unrecoverable_error())
}

/// `url` with any password replaced, for messages and `Debug`.
fn without_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_shows() {
        assert_eq!(
            without_password("redis://default:s3cret@cache:6379/0"),
            "redis://default:***@cache:6379/0"
        );
        assert_eq!(
            without_password("redis://cache:6379/"),
            "redis://cache:6379/"
        );
        let redis = Redis::new("redis://u:s3cret@127.0.0.1:1/").unwrap();
        assert!(!format!("{redis:?}").contains("s3cret"));
    }

    #[test]
    fn a_bad_url_is_refused_with_the_shape_to_use() {
        let error = Redis::new("http://nope").unwrap_err();
        assert!(
            error.to_string().contains("redis://host:port/db"),
            "{error}"
        );
    }

    #[test]
    fn redis_rs_timeouts_are_the_time_limit_and_drops_are_retried() {
        use std::io::{Error, ErrorKind};
        let limit = Duration::from_millis(250);
        let timed_out = redis::RedisError::from(Error::new(ErrorKind::TimedOut, "timed out"));
        let error = failure(&timed_out, limit);
        assert_eq!(error, RedisError::Timeout(limit));
        assert!(error.to_string().contains("Redis::with_timeout"), "{error}");
        assert!(!connection_dropped(&timed_out));
        for kind in [
            ErrorKind::BrokenPipe,
            ErrorKind::ConnectionReset,
            ErrorKind::UnexpectedEof,
        ] {
            let dropped = redis::RedisError::from(Error::new(kind, "gone"));
            assert!(connection_dropped(&dropped), "{kind:?}");
            assert!(matches!(failure(&dropped, limit), RedisError::Failed(_)));
        }
    }

    #[tokio::test]
    async fn a_redis_that_never_answers_is_a_timeout_with_the_advice() {
        // Accepts connections and never answers: the handshake or the command waits.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let limit = Duration::from_millis(200);
        let redis = Redis::new(&format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .with_timeout(limit);
        let error = redis
            .run(|mut connection| async move {
                redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
            })
            .await
            .unwrap_err();
        silent.abort();
        assert_eq!(error, RedisError::Timeout(limit));
    }

    #[test]
    fn a_tls_url_is_refused_as_tls_not_as_a_bad_url() {
        for url in [
            "rediss://default:s3cret@cache:6380/0",
            " REDISS://cache:6380",
        ] {
            let error = Redis::new(url).unwrap_err();
            assert!(matches!(error, RedisError::TlsNotBuiltIn { .. }), "{error}");
            let message = error.to_string();
            assert!(message.contains("TLS"), "{message}");
            assert!(!message.contains("not a Redis URL"), "{message}");
            assert!(!message.contains("s3cret"), "{message}");
        }
    }

    #[tokio::test]
    async fn an_unreachable_redis_fails_within_the_time_limit() {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once
        // or, on a filtered host, times out; either way within the limit.
        let redis = Redis::new("redis://127.0.0.1:1/")
            .unwrap()
            .with_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let result = redis
            .run(|mut connection| async move {
                redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
            })
            .await;
        assert!(result.is_err());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
