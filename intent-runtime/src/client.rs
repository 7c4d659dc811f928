//! STUB: the client.
/// The client.
#[derive(Debug, Clone)]
pub struct IntentClient;
/// The builder.
#[derive(Debug)]
pub struct IntentClientBuilder;
