//! RFC 8785 straight from `Serialize`, with no `serde_json::Value` tree in between: the
//! planHash of a call list is computed on every plan, and building the tree cost a third of
//! the hash in allocations.
//!
//! Object members are written into the output as they come; when an object ends, its members
//! are re-emitted in JCS key order from a reusable scratch buffer (the values stay serialized
//! once). The result equals `canonicalize(&serde_json::to_value(x)?)` for every value; a
//! property test holds it to that.

use super::{utf16_cmp, write_f64, write_i64, write_string, write_u64};
use serde::ser::{self, Serialize};
use std::fmt;

/// A value serde cannot write as canonical JSON (a map key that is not a string or number).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CanonicalError(String);

impl ser::Error for CanonicalError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        CanonicalError(msg.to_string())
    }
}

/// The canonical JSON of `value`, as `canonicalize(&serde_json::to_value(value)?)` gives it.
pub fn to_canonical<T: Serialize + ?Sized>(value: &T) -> Result<String, CanonicalError> {
    let mut jcs = Jcs::default();
    value.serialize(&mut jcs)?;
    Ok(jcs.out)
}

/// One member of an object being written: its raw key (a range of `keys`) and its value's
/// bytes (a range of `out`).
struct Member {
    key: (usize, usize),
    value: (usize, usize),
}

#[derive(Default)]
struct Jcs {
    out: String,
    /// Members of the objects being written, innermost last.
    members: Vec<Member>,
    /// Raw keys of those members.
    keys: String,
    /// Where an object's values are copied while they are re-emitted in key order.
    scratch: String,
}

/// An object being written: where its values start, its first member and key, and what
/// closes it (`}`, or `}}` inside a variant's `{"Variant": ...}`).
#[doc(hidden)]
pub struct Object<'j> {
    jcs: &'j mut Jcs,
    start: usize,
    members: usize,
    keys: usize,
    /// Where the key given to `serialize_key` starts in `keys`.
    key: usize,
    close: &'static str,
}

/// An array being written, and what closes it (`]`, or `]}` inside a variant).
#[doc(hidden)]
pub struct Array<'j> {
    jcs: &'j mut Jcs,
    first: bool,
    close: &'static str,
}

impl Jcs {
    fn object(&mut self, close: &'static str) -> Object<'_> {
        self.out.push('{');
        Object {
            start: self.out.len(),
            members: self.members.len(),
            keys: self.keys.len(),
            key: self.keys.len(),
            close,
            jcs: self,
        }
    }

    fn array(&mut self, close: &'static str) -> Array<'_> {
        self.out.push('[');
        Array {
            jcs: self,
            first: true,
            close,
        }
    }

    /// Opens `{"variant":`, a one-member object, so already in canonical order.
    fn variant(&mut self, variant: &str) {
        self.out.push('{');
        write_string(&mut self.out, variant);
        self.out.push(':');
    }
}

impl Object<'_> {
    fn value<T: Serialize + ?Sized>(
        &mut self,
        key: usize,
        value: &T,
    ) -> Result<(), CanonicalError> {
        let key = (key, self.jcs.keys.len());
        let start = self.jcs.out.len();
        value.serialize(&mut *self.jcs)?;
        let value = (start, self.jcs.out.len());
        self.jcs.members.push(Member { key, value });
        Ok(())
    }

    /// Re-emits the members in JCS order, each key once (a repeated key keeps its last value,
    /// as a JSON object built from the same members would).
    fn end(self) -> Result<(), CanonicalError> {
        let jcs = self.jcs;
        let keys = &jcs.keys;
        let key = |m: &Member| &keys[m.key.0..m.key.1];
        let members = &mut jcs.members[self.members..];
        // Stable: among equal keys the last written stays last, and wins below. Structs
        // whose fields are already in order cost one pass.
        if !members.is_sorted_by(|a, b| utf16_cmp(key(a), key(b)).is_lt()) {
            members.sort_by(|a, b| utf16_cmp(key(a), key(b)));
        }
        jcs.scratch.clear();
        jcs.scratch.push_str(&jcs.out[self.start..]);
        jcs.out.truncate(self.start);
        let mut first = true;
        for (i, m) in members.iter().enumerate() {
            if members.get(i + 1).is_some_and(|next| key(next) == key(m)) {
                continue;
            }
            if !first {
                jcs.out.push(',');
            }
            first = false;
            write_string(&mut jcs.out, key(m));
            jcs.out.push(':');
            let (a, b) = (m.value.0 - self.start, m.value.1 - self.start);
            jcs.out.push_str(&jcs.scratch[a..b]);
        }
        jcs.out.push_str(self.close);
        jcs.members.truncate(self.members);
        jcs.keys.truncate(self.keys);
        Ok(())
    }
}

impl Array<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        if !self.first {
            self.jcs.out.push(',');
        }
        self.first = false;
        value.serialize(&mut *self.jcs)
    }

    fn end(self) -> Result<(), CanonicalError> {
        self.jcs.out.push_str(self.close);
        Ok(())
    }
}

impl<'j> ser::Serializer for &'j mut Jcs {
    type Ok = ();
    type Error = CanonicalError;
    type SerializeSeq = Array<'j>;
    type SerializeTuple = Array<'j>;
    type SerializeTupleStruct = Array<'j>;
    type SerializeTupleVariant = Array<'j>;
    type SerializeMap = Object<'j>;
    type SerializeStruct = Object<'j>;
    type SerializeStructVariant = Object<'j>;

    fn serialize_bool(self, v: bool) -> Result<(), CanonicalError> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), CanonicalError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), CanonicalError> {
        write_i64(&mut self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), CanonicalError> {
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(i), _) => self.serialize_i64(i),
            (_, Ok(u)) => self.serialize_u64(u),
            _ => Err(ser::Error::custom("number out of range")),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), CanonicalError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), CanonicalError> {
        write_u64(&mut self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), CanonicalError> {
        match u64::try_from(v) {
            Ok(u) => self.serialize_u64(u),
            Err(_) => Err(ser::Error::custom("number out of range")),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<(), CanonicalError> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), CanonicalError> {
        // Non-finite numbers come out as null, as serde_json makes them.
        write_f64(&mut self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), CanonicalError> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), CanonicalError> {
        write_string(&mut self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), CanonicalError> {
        let mut array = self.array("]");
        for b in v {
            array.element(b)?;
        }
        array.end()
    }
    fn serialize_none(self) -> Result<(), CanonicalError> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CanonicalError> {
        self.out.push_str("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), CanonicalError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), CanonicalError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        self.variant(variant);
        value.serialize(&mut *self)?;
        self.out.push('}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Array<'j>, CanonicalError> {
        Ok(self.array("]"))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Array<'j>, CanonicalError> {
        Ok(self.array("]"))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Array<'j>, CanonicalError> {
        Ok(self.array("]"))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Array<'j>, CanonicalError> {
        self.variant(variant);
        Ok(self.array("]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'j>, CanonicalError> {
        Ok(self.object("}"))
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Object<'j>, CanonicalError> {
        Ok(self.object("}"))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Object<'j>, CanonicalError> {
        self.variant(variant);
        Ok(self.object("}}"))
    }
}

/// The array-like serde traits: each element is one array element.
macro_rules! array_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Array<'_> {
            type Ok = ();
            type Error = CanonicalError;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonicalError> {
                self.element(v)
            }
            fn end(self) -> Result<(), CanonicalError> {
                Array::end(self)
            }
        }
    )*};
}

array_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), CanonicalError> {
        let start = self.jcs.keys.len();
        self.jcs.keys.push_str(key);
        self.value(start, v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        Object::end(self)
    }
}

impl ser::SerializeStructVariant for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), CanonicalError> {
        ser::SerializeStruct::serialize_field(self, key, v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        Object::end(self)
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CanonicalError> {
        self.key = self.jcs.keys.len();
        // serde_json's rule: string keys, and numbers and booleans written as strings.
        match serde_json::to_value(key).map_err(ser::Error::custom)? {
            serde_json::Value::String(s) => self.jcs.keys.push_str(&s),
            serde_json::Value::Number(n) => self.jcs.keys.push_str(&n.to_string()),
            serde_json::Value::Bool(b) => self.jcs.keys.push_str(if b { "true" } else { "false" }),
            _ => return Err(ser::Error::custom("key must be a string")),
        }
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CanonicalError> {
        self.value(self.key, v)
    }
    fn end(self) -> Result<(), CanonicalError> {
        Object::end(self)
    }
}
