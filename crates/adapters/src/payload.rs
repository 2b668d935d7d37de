//! How an inbox record's payload is stored: DynamoDB bills a write by the
//! item's size in 1 KB units, and the payload is most of the item, so a
//! payload that compresses is stored compressed.
//!
//! Raw DEFLATE (RFC 1951, `flate2` on the pure-Rust `miniz_oxide` backend)
//! rather than zstd: on webhook-sized JSON (1–8 KiB) it compressed as well
//! or better in our measurements (docs/capacity.md), the workspace already
//! locks it (the CLI's CloudWatch client uses it), and it needs no C
//! toolchain in the cross-compiled `sam build`. The domain never sees the
//! encoding: the record carries the payload as text; only this module knows
//! how the attribute holds it.

use std::{cell::RefCell, io::Read};

use aws_sdk_dynamodb::{primitives::Blob, types::AttributeValue};
use flate2::{Compress, Compression, FlushCompress, Status, read::DeflateDecoder};

use crate::attrs::Item;

/// The attribute: a string holds the payload as text (small, or not
/// compressible), a binary holds it as raw DEFLATE bytes. One name for both,
/// so the upsert's `if_not_exists(payload, …)` keeps whichever a first
/// delivery stored (records written before compression stay text), and a
/// repeat can never add a second copy beside it.
pub const ATTRIBUTE: &str = "payload";

/// Below this, compression cannot move an item across a write unit often
/// enough to pay for the unreadable attribute: the payload stays text.
pub const COMPRESS_FROM: usize = 512;

/// The largest payload a stored one may inflate to. Nothing larger reaches
/// the ingress (Lambda's synchronous request payload is capped at 6 MB), so
/// a bigger result is a corrupt or hostile item, refused before it is held.
pub const MAX_INFLATED: u64 = 6 * 1024 * 1024;

/// The stored value of a payload.
pub fn encode(payload: &str) -> AttributeValue {
    if payload.len() >= COMPRESS_FROM
        && let Some(deflated) = deflate(payload.as_bytes())
    {
        return AttributeValue::B(Blob::new(deflated));
    }
    AttributeValue::S(payload.to_owned())
}

thread_local! {
    /// One compressor per thread, reset between payloads: a fresh one
    /// allocates and zeroes some 300 KB of tables, which cost more CPU than
    /// compressing a 2 KiB payload (0.3 ms per delivery under `make perf`).
    static COMPRESSOR: RefCell<Compress> =
        RefCell::new(Compress::new(Compression::default(), false));
}

/// `bytes` as raw DEFLATE, if that is shorter.
fn deflate(bytes: &[u8]) -> Option<Vec<u8>> {
    COMPRESSOR.with_borrow_mut(|compressor| {
        compressor.reset();
        // Room for no more than the input: what does not fit is not worth it.
        let mut out = Vec::with_capacity(bytes.len() - 1);
        match compressor.compress_vec(bytes, &mut out, FlushCompress::Finish) {
            Ok(Status::StreamEnd) => Some(out),
            _ => None,
        }
    })
}

/// The payload of a stored item, whichever way it was stored.
pub fn decode(item: &Item) -> Result<String, String> {
    match item.get(ATTRIBUTE) {
        Some(AttributeValue::S(text)) => Ok(text.clone()),
        Some(AttributeValue::B(bytes)) => inflate(bytes.as_ref()),
        _ => Err(format!(
            "attribute {ATTRIBUTE} is missing or neither a string nor binary"
        )),
    }
}

fn inflate(bytes: &[u8]) -> Result<String, String> {
    let mut text = String::new();
    let read = DeflateDecoder::new(bytes)
        .take(MAX_INFLATED + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("attribute {ATTRIBUTE} does not inflate to UTF-8 text: {e}"))?;
    if read as u64 > MAX_INFLATED {
        return Err(format!(
            "attribute {ATTRIBUTE} inflates past {MAX_INFLATED} bytes"
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::write::DeflateEncoder;

    use super::*;

    fn stored(payload: &str) -> Item {
        Item::from([(ATTRIBUTE.to_owned(), encode(payload))])
    }

    #[test]
    fn a_small_payload_stays_text() {
        let item = stored(r#"{"a":1}"#);
        assert_eq!(item[ATTRIBUTE], AttributeValue::S(r#"{"a":1}"#.into()));
        assert_eq!(decode(&item).unwrap(), r#"{"a":1}"#);
    }

    #[test]
    fn a_compressible_payload_is_stored_deflated_and_reads_back_exactly() {
        let payload = format!(
            r#"{{"transcript":"{}","é":"ü"}}"#,
            "the customer asked about the invoice ".repeat(40)
        );
        let item = stored(&payload);
        let Some(AttributeValue::B(bytes)) = item.get(ATTRIBUTE) else {
            panic!("expected {ATTRIBUTE}, got {item:?}");
        };
        assert!(
            bytes.as_ref().len() * 4 < payload.len(),
            "{}",
            bytes.as_ref().len()
        );
        assert_eq!(decode(&item).unwrap(), payload);
    }

    #[test]
    fn the_reused_compressor_deflates_the_same_payload_to_the_same_bytes() {
        let payload = format!("{{\"n\":\"{}\"}}", "abc ".repeat(300));
        let other = format!("{{\"m\":\"{}\"}}", "xyz ".repeat(500));
        let first = encode(&payload);
        encode(&other);
        assert_eq!(encode(&payload), first);
        assert_eq!(
            decode(&Item::from([(ATTRIBUTE.to_owned(), first)])).unwrap(),
            payload
        );
    }

    #[test]
    fn what_deflate_cannot_shorten_is_not_deflated() {
        // Text always shortens a little; random bytes stand for the payload
        // that would not (deflate's stored blocks add 5 bytes per block).
        let mut rng = fastrand::Rng::with_seed(7);
        let noise: Vec<u8> = (0..2048).map(|_| rng.u8(..)).collect();
        assert_eq!(deflate(&noise), None);
        let short = "a short body, under the threshold";
        assert_eq!(encode(short), AttributeValue::S(short.into()));
    }

    #[test]
    fn a_deflate_bomb_is_refused_before_it_is_held() {
        let zeros = vec![b' '; MAX_INFLATED as usize + 1];
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::best());
        encoder.write_all(&zeros).unwrap();
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < 16 * 1024, "{}", bomb.len());
        let item = Item::from([(ATTRIBUTE.to_owned(), AttributeValue::B(Blob::new(bomb)))]);
        assert_eq!(
            decode(&item),
            Err(format!(
                "attribute {ATTRIBUTE} inflates past {MAX_INFLATED} bytes"
            ))
        );
    }

    #[test]
    fn garbage_and_other_types_are_errors_not_payloads() {
        let garbage = Item::from([(
            ATTRIBUTE.to_owned(),
            AttributeValue::B(Blob::new(vec![0xff, 0x00, 0x13])),
        )]);
        assert!(
            decode(&garbage)
                .unwrap_err()
                .starts_with("attribute payload does not inflate")
        );
        let number = Item::from([(ATTRIBUTE.to_owned(), AttributeValue::N("1".into()))]);
        let missing = "attribute payload is missing or neither a string nor binary";
        assert_eq!(decode(&number), Err(missing.into()));
        assert_eq!(decode(&Item::new()), Err(missing.into()));
    }
}
