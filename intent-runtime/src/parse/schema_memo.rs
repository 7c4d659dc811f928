//! What the repair walk derives from a schema node alone, computed once per node and walk.
//!
//! A reply's values share schema nodes (twenty invoice lines share one `Line` schema), and
//! what the walk needs from a node — its `$ref`s followed, its enum shape, its union
//! branches, its declared types and properties — depends on the schema only. The walk
//! borrows the schema for its whole life, so a node's address identifies it for as long as
//! the memo lives.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use serde_json::{Map, Value};

use super::schema_nav::{
    MAX_SCHEMA_HOPS, declared_types, enum_members_of, is_null_schema, resolve, types_named,
    union_branches,
};

/// The derived facts of each schema node met during one walk, keyed by the node's address.
pub(super) struct SchemaMemo<'s> {
    /// The schema `$ref`s resolve in.
    root: &'s Value,
    /// Facts by node address; an `Rc` so that the walk keeps a node's facts while it
    /// recurses (and the memo grows) below it.
    nodes: HashMap<usize, Rc<NodeFacts<'s>>, BuildHasherDefault<AddressHasher>>,
}

impl<'s> SchemaMemo<'s> {
    /// An empty memo for schemas whose `$ref`s resolve inside `root`.
    pub(super) fn new(root: &'s Value) -> Self {
        Self {
            root,
            // Room for a typical target's nodes (the bench invoice has 13), so the table
            // is allocated once.
            nodes: HashMap::with_capacity_and_hasher(16, BuildHasherDefault::default()),
        }
    }

    /// The facts of `schema` (a node of the schema, `$ref`s not yet followed), derived on
    /// first use.
    pub(super) fn facts(&mut self, schema: &'s Value) -> Rc<NodeFacts<'s>> {
        let root = self.root;
        Rc::clone(
            self.nodes
                .entry(std::ptr::from_ref(schema).addr())
                .or_insert_with(|| Rc::new(NodeFacts::of(root, schema))),
        )
    }
}

/// What the walk reads from one schema node, its `$ref`s followed.
pub(super) struct NodeFacts<'s> {
    /// The name of the last definition a `$ref` led to (`Line` for `#/$defs/Line`).
    pub(super) defined_name: Option<&'s str>,
    /// The parts of an `allOf` (empty without one).
    pub(super) all_of: &'s [Value],
    /// The enum the node stands for, when it is one and accepts no free text.
    pub(super) enum_shape: Option<EnumShape<'s>>,
    /// The union branches that accept more than `null`, in schema order.
    pub(super) branches: Vec<Branch<'s>>,
    /// Whether a string value is read as a number here.
    pub(super) number_from_string: NumberFromString,
    /// The declared properties, when the node declares any.
    pub(super) properties: Option<PropertyTable<'s>>,
    /// The names in `required`, in schema order.
    pub(super) required: Vec<&'s str>,
    /// The schema of properties not declared (`additionalProperties`, when a schema).
    pub(super) additional: Option<&'s Value>,
    /// The schemas of the first items (`prefixItems`).
    pub(super) prefix_items: Option<&'s [Value]>,
    /// The schema of the other items (`items`, when a schema).
    pub(super) items: Option<&'s Value>,
}

impl<'s> NodeFacts<'s> {
    fn of(root: &'s Value, schema: &'s Value) -> Self {
        let (schema, defined_name) = resolve(root, schema);
        let keywords = Keywords::of(schema);
        let union = keywords
            .any_of
            .and_then(Value::as_array)
            .or_else(|| keywords.one_of.and_then(Value::as_array))
            .map_or(&[][..], Vec::as_slice);
        // Enum members come only from `enum`, `const` and union branches (behind `$ref`s,
        // which a schema still holding a `$ref` here failed to follow): without any of
        // them there is no enum to search for.
        let may_be_enum = keywords.reference
            || keywords.enumeration.is_some()
            || keywords.constant.is_some()
            || !union.is_empty();
        let required: Vec<&'s str> = keywords
            .required
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        Self {
            defined_name,
            all_of: keywords
                .all_of
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice),
            enum_shape: may_be_enum.then(|| EnumShape::of(root, schema)).flatten(),
            branches: union
                .iter()
                .filter_map(|branch| Branch::of(root, branch))
                .collect(),
            number_from_string: NumberFromString::for_types(&types_named(keywords.types)),
            properties: keywords
                .properties
                .and_then(Value::as_object)
                .map(|declared| PropertyTable::new(declared, &required)),
            required,
            additional: keywords.additional.filter(|s| s.is_object()),
            prefix_items: keywords
                .prefix_items
                .and_then(Value::as_array)
                .map(Vec::as_slice),
            items: keywords.items.filter(|s| s.is_object()),
        }
    }
}

/// The keywords of one schema object the walk reads, found in one pass over its entries:
/// a schema node holds a handful of keys, and a pass comparing them costs less than a
/// SipHashed lookup per keyword.
#[derive(Default)]
struct Keywords<'s> {
    reference: bool,
    all_of: Option<&'s Value>,
    any_of: Option<&'s Value>,
    one_of: Option<&'s Value>,
    enumeration: Option<&'s Value>,
    constant: Option<&'s Value>,
    types: Option<&'s Value>,
    properties: Option<&'s Value>,
    required: Option<&'s Value>,
    additional: Option<&'s Value>,
    prefix_items: Option<&'s Value>,
    items: Option<&'s Value>,
}

impl<'s> Keywords<'s> {
    fn of(schema: &'s Value) -> Self {
        let mut found = Self::default();
        let Some(entries) = schema.as_object() else {
            return found;
        };
        for (key, value) in entries {
            match key.as_str() {
                "$ref" => found.reference = true,
                "allOf" => found.all_of = Some(value),
                "anyOf" => found.any_of = Some(value),
                "oneOf" => found.one_of = Some(value),
                "enum" => found.enumeration = Some(value),
                "const" => found.constant = Some(value),
                "type" => found.types = Some(value),
                "properties" => found.properties = Some(value),
                "required" => found.required = Some(value),
                "additionalProperties" => found.additional = Some(value),
                "prefixItems" => found.prefix_items = Some(value),
                "items" => found.items = Some(value),
                _ => {}
            }
        }
        found
    }
}

/// Whether a string where the schema wants a number is read as one, and as which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NumberFromString {
    /// The schema takes a string, or no number: the string stays.
    Never,
    /// Only an integer is wanted.
    Integer,
    /// Any number is wanted.
    Number,
}

impl NumberFromString {
    fn for_types(types: &[&str]) -> Self {
        if types.contains(&"string") {
            Self::Never
        } else if types.contains(&"number") {
            Self::Number
        } else if types.contains(&"integer") {
            Self::Integer
        } else {
            Self::Never
        }
    }
}

/// An object schema's properties, looked up by exact name without hashing: a reply's
/// keys are checked against the same few properties again and again, and a binary search
/// over a handful of names costs less than SipHashing each key.
pub(super) struct PropertyTable<'s> {
    /// The properties as declared, in schema order.
    pub(super) declared: &'s Map<String, Value>,
    /// The properties sorted by name length, then name, each with whether it is required.
    by_name: Vec<Property<'s>>,
    /// How many distinct properties `required` names, or `None` when it names one the
    /// schema does not declare.
    required_declared: Option<usize>,
}

struct Property<'s> {
    name: &'s str,
    schema: &'s Value,
    required: bool,
}

impl<'s> PropertyTable<'s> {
    fn new(declared: &'s Map<String, Value>, required: &[&str]) -> Self {
        let mut by_name: Vec<Property<'s>> = declared
            .iter()
            .map(|(name, schema)| Property {
                name,
                schema,
                required: false,
            })
            .collect();
        by_name.sort_unstable_by(|a, b| by_length_then_bytes(a.name, b.name));
        let mut table = Self {
            declared,
            by_name,
            required_declared: Some(0),
        };
        for name in required {
            let found = table
                .position(name)
                .and_then(|index| table.by_name.get_mut(index));
            match found {
                Some(property) => property.required = true,
                None => table.required_declared = None,
            }
        }
        if table.required_declared.is_some() {
            let distinct = table.by_name.iter().filter(|p| p.required).count();
            table.required_declared = Some(distinct);
        }
        table
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.by_name
            .binary_search_by(|property| by_length_then_bytes(property.name, key))
            .ok()
    }

    fn find(&self, key: &str) -> Option<&Property<'s>> {
        self.position(key).and_then(|index| self.by_name.get(index))
    }

    /// The schema of the property named exactly `key`.
    pub(super) fn get(&self, key: &str) -> Option<&'s Value> {
        self.find(key).map(|property| property.schema)
    }

    /// Reads an object's keys against the table in one pass.
    pub(super) fn scan(&self, object: &Map<String, Value>) -> KeyScan {
        let mut scan = KeyScan {
            undeclared: 0,
            required_present: 0,
        };
        for key in object.keys() {
            match self.find(key) {
                Some(property) => scan.required_present += usize::from(property.required),
                None => scan.undeclared += 1,
            }
        }
        scan
    }

    /// Whether an object whose keys gave `scan` holds every property `required` names.
    /// `false` also when `required` names a property the schema does not declare, so
    /// that the caller's field-by-field check, which reports each missing one, runs then.
    pub(super) fn holds_every_required(&self, scan: &KeyScan) -> bool {
        self.required_declared == Some(scan.required_present)
    }
}

/// What one pass over an object's keys found against a [`PropertyTable`].
pub(super) struct KeyScan {
    /// How many keys name no declared property (exactly).
    pub(super) undeclared: usize,
    /// How many keys name a required property.
    pub(super) required_present: usize,
}

/// The table's order: names of different lengths are told apart without reading them.
fn by_length_then_bytes(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// A union branch that accepts more than `null`, with what choosing it needs.
pub(super) struct Branch<'s> {
    /// The branch as written (the walk visits it, `$ref`s and all).
    pub(super) schema: &'s Value,
    /// The properties the branch declares, its `$ref`s followed.
    pub(super) properties: Option<&'s Map<String, Value>>,
    /// The JSON types the branch names, its `$ref`s followed.
    pub(super) types: Vec<&'s str>,
}

impl<'s> Branch<'s> {
    /// The branch's facts, or `None` for a branch that accepts only `null`.
    fn of(root: &'s Value, branch: &'s Value) -> Option<Self> {
        let (resolved, _) = resolve(root, branch);
        if is_null_schema(resolved) {
            return None;
        }
        Some(Self {
            schema: branch,
            properties: resolved.get("properties").and_then(Value::as_object),
            types: declared_types(resolved),
        })
    }
}

/// The members of an enum schema, when the schema is one and does not also accept free
/// text.
pub(super) struct EnumShape<'s> {
    /// The members, in schema order.
    pub(super) members: Vec<&'s str>,
    /// Whether only members are allowed (no data-carrying variants beside them).
    pub(super) only_members: bool,
    /// The enum's name, when a `$ref` to its definition names it.
    pub(super) name: Option<&'s str>,
}

impl<'s> EnumShape<'s> {
    /// The shape of `schema` (its `$ref`s already followed once by the caller).
    pub(super) fn of(root: &'s Value, schema: &'s Value) -> Option<Self> {
        let members = enum_members_of(root, schema);
        if members.is_empty() {
            return None;
        }
        let mut leaves = Vec::new();
        collect_leaves(root, schema, None, &mut leaves, &mut HashSet::new(), 0);
        let is_member_leaf =
            |leaf: &Value| leaf.get("enum").is_some() || leaf.get("const").is_some();
        let free_text = leaves
            .iter()
            .any(|(leaf, _)| !is_member_leaf(leaf) && declared_types(leaf).contains(&"string"));
        if free_text {
            return None;
        }
        let only_members = leaves
            .iter()
            .all(|(leaf, _)| is_member_leaf(leaf) || is_null_schema(leaf));
        let name = leaves
            .iter()
            .find(|(leaf, _)| is_member_leaf(leaf))
            .and_then(|(_, name)| *name);
        Some(Self {
            members,
            only_members,
            name,
        })
    }
}

/// The schemas a union stands for, unions flattened and references followed, each with
/// the name of the definition it was reached through.
fn collect_leaves<'a>(
    root: &'a Value,
    schema: &'a Value,
    name: Option<&'a str>,
    leaves: &mut Vec<(&'a Value, Option<&'a str>)>,
    seen: &mut HashSet<*const Value>,
    depth: usize,
) {
    let (schema, defined_name) = resolve(root, schema);
    if depth > MAX_SCHEMA_HOPS || !seen.insert(schema) {
        return;
    }
    let name = defined_name.or(name);
    let branches = union_branches(schema);
    if branches.is_empty() {
        leaves.push((schema, name));
    }
    for branch in branches {
        collect_leaves(root, branch, name, leaves, seen, depth + 1);
    }
}

/// Hashes a node address with one multiplication. The keys are addresses inside a schema
/// the program holds, not input an adversary picks, so SipHash's flooding resistance buys
/// nothing here; the multiplication spreads the aligned low bits into the high bits the
/// table reads.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_usize(&mut self, address: usize) {
        self.0 = address as u64;
    }

    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_node_is_derived_once_and_shared() {
        let root = json!({"$defs": {"Mood": {"enum": ["Up", "Down"]}},
                          "items": {"$ref": "#/$defs/Mood"}});
        let node = &root["items"];
        let mut memo = SchemaMemo::new(&root);
        let first = memo.facts(node);
        let again = memo.facts(node);
        assert!(Rc::ptr_eq(&first, &again));
        assert_eq!(first.defined_name, Some("Mood"));
        let shape = first
            .enum_shape
            .as_ref()
            .map(|s| (&s.members, s.only_members));
        assert_eq!(shape, Some((&vec!["Up", "Down"], true)));
    }

    #[test]
    fn equal_nodes_at_different_addresses_are_kept_apart() {
        let root = json!({"a": {"type": "integer"}, "b": {"type": "integer"},
                          "c": {"type": "string"}});
        let mut memo = SchemaMemo::new(&root);
        let a = memo.facts(&root["a"]);
        let b = memo.facts(&root["b"]);
        let c = memo.facts(&root["c"]);
        assert!(!Rc::ptr_eq(&a, &b));
        assert_eq!(
            (a.number_from_string, c.number_from_string),
            (NumberFromString::Integer, NumberFromString::Never)
        );
    }

    #[test]
    fn union_branches_that_accept_only_null_are_left_out() {
        let root = json!({"$defs": {"Line": {"type": "object", "properties": {"qty": {}}},
                                    "Nothing": {"const": null}},
                          "anyOf": [{"$ref": "#/$defs/Nothing"}, {"type": "null"},
                                    {"$ref": "#/$defs/Line"}, {"type": ["integer", "null"]}]});
        let facts = SchemaMemo::new(&root).facts(&root);
        let kept: Vec<(&Value, Option<usize>, Vec<&str>)> = facts
            .branches
            .iter()
            .map(|b| (b.schema, b.properties.map(Map::len), b.types.clone()))
            .collect();
        assert_eq!(
            kept,
            vec![
                (&root["anyOf"][2], Some(1), vec!["object"]),
                (&root["anyOf"][3], None, vec!["integer", "null"]),
            ]
        );
    }

    #[test]
    fn a_node_left_on_a_reference_cycle_is_still_searched_for_an_enum() {
        // Following refs stops after MAX_SCHEMA_HOPS on C3, which names no enum; the
        // enum search follows C3's own `$ref` on to C2's `const`, so it must still run.
        let root = json!({"$defs": {
            "C1": {"$ref": "#/$defs/C2", "enum": ["Small"]},
            "C2": {"$ref": "#/$defs/C3", "const": "Large", "type": "integer"},
            "C3": {"$ref": "#/$defs/C1", "type": "number"}},
            "items": {"$ref": "#/$defs/C2"}});
        let facts = SchemaMemo::new(&root).facts(&root["items"]);
        let shape = facts
            .enum_shape
            .as_ref()
            .map(|s| (s.members.clone(), s.only_members, s.name));
        assert_eq!(shape, Some((vec!["Large"], true, Some("C2"))));
    }

    #[test]
    fn enums_that_also_take_free_text_have_no_shape() {
        let root = json!({"anyOf": [{"enum": ["A"]}, {"type": "string"}]});
        assert!(SchemaMemo::new(&root).facts(&root).enum_shape.is_none());
        let with_data = json!({"$defs": {"E": {"oneOf": [{"const": "A"}, {"type": "object"}]}},
                               "anyOf": [{"$ref": "#/$defs/E"}, {"type": "null"}]});
        let facts = SchemaMemo::new(&with_data).facts(&with_data);
        let shape = facts.enum_shape.as_ref().map(|s| (s.only_members, s.name));
        assert_eq!(shape, Some((false, Some("E"))));
    }
}
