//! The shapes `#[derive(StrictCompatible)]` accepts, serde attributes included.

use std::collections::{BTreeSet, HashMap, VecDeque};

use intent_rs::StrictCompatible;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, StrictCompatible)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Address {
    street_name: String,
    #[serde(rename = "zip")]
    postal_code: Option<u32>,
}

#[derive(Deserialize, JsonSchema, StrictCompatible)]
struct Customer {
    name: String,
    #[serde(flatten)]
    address: Address,
    tags: BTreeSet<String>,
    history: VecDeque<[u8; 2]>,
    #[serde(skip)]
    cache: HashMap<String, String>,
    #[serde(skip_deserializing, default)]
    computed: HashMap<String, String>,
    #[schemars(with = "String")]
    #[serde(default)]
    opaque: Opaque,
}

#[derive(Default, Deserialize)]
#[serde(from = "String")]
struct Opaque;

impl From<String> for Opaque {
    fn from(_: String) -> Self {
        Opaque
    }
}

#[derive(Deserialize, JsonSchema, StrictCompatible)]
struct Page<T> {
    items: Vec<T>,
    next: Option<Box<String>>,
}

#[derive(Deserialize, JsonSchema, StrictCompatible)]
struct Id(String);

#[derive(Deserialize, JsonSchema, StrictCompatible)]
enum Plain {
    A,
    B,
}

#[derive(Deserialize, JsonSchema, StrictCompatible)]
enum External {
    Unit,
    Newtype(Address),
    Struct { x: i32 },
}

#[derive(Deserialize, JsonSchema, StrictCompatible)]
#[serde(tag = "kind")]
enum Internal {
    Unit,
    Struct { x: i32 },
}

#[derive(Deserialize, JsonSchema, StrictCompatible)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Newtype(Address),
    Unit,
}

#[derive(Deserialize, JsonSchema, StrictCompatible)]
#[serde(untagged)]
enum Untagged {
    Text(String),
    Both { a: u8, b: u8 },
}

fn strict<T: StrictCompatible>() {}

fn main() {
    strict::<Customer>();
    strict::<Page<Customer>>();
    strict::<Id>();
    strict::<Plain>();
    strict::<External>();
    strict::<Internal>();
    strict::<Adjacent>();
    strict::<Untagged>();
}
