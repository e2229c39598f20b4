//! Idempotency keys (errors-and-auth.md §6): a key bound to its scope (member, route, ids) and
//! its envelope's digest; a receipt kept 24 hours answers a repeat with `replayed: true`.

use nexus_core::codes::Code;
use nexus_core::jcs;
use nexus_store::{Engine, NewReceipt, StoreError};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::refuse;

/// Receipts are kept for 24 hours.
const RECEIPT_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// A validated `Idempotency-Key` bound to its scope and envelope.
pub(crate) struct Idempotency {
    pub(crate) scope_hash: String,
    envelope_sha256: String,
}

pub(crate) fn sha_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// An `Idempotency-Key`'s grammar (errors-and-auth.md §6): 1–64 visible ASCII characters,
/// else 400 `parameter_invalid`. The member doors' keys and the claim's.
pub(crate) fn check_idempotency_key(key: &str) -> KernelResult<()> {
    let ok = !key.is_empty()
        && key.len() <= nexus_core::bounds::IDEMPOTENCY_KEY_CHARS
        && key.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if !ok {
        return Err(refuse(
            Code::ParameterInvalid,
            "Idempotency-Key must be 1-64 visible ASCII characters",
        ));
    }
    Ok(())
}

impl Idempotency {
    /// `key`: 1–64 visible ASCII characters, else 400 `parameter_invalid`.
    pub(crate) fn new(member: Uuid, route: &str, ids: &[Uuid], key: &str, body: &Value) -> KernelResult<Idempotency> {
        check_idempotency_key(key)?;
        let mut scope = format!("{member}\0{route}");
        for id in ids {
            scope.push('\0');
            scope.push_str(&id.to_string());
        }
        scope.push('\0');
        scope.push_str(key);
        Ok(Idempotency {
            scope_hash: sha_hex(scope.as_bytes()),
            envelope_sha256: sha_hex(jcs::to_string(body).as_bytes()),
        })
    }

    /// The replay of a stored receipt, or 409 on a different envelope.
    pub(crate) fn replay(&self, receipt: &nexus_store::ReceiptRow) -> KernelResult<(u16, Value)> {
        if receipt.envelope_sha256 != self.envelope_sha256 {
            return Err(refuse(
                Code::IdempotencyEnvelopeMismatch,
                "this Idempotency-Key was used with a different body",
            ));
        }
        let mut body: Value = serde_json::from_str(&receipt.body).unwrap_or_else(|_| json!({}));
        if let Value::Object(m) = &mut body {
            m.insert("replayed".into(), Value::Bool(true));
        }
        Ok((200, body))
    }
}

impl Kernel {
    /// Stores the receipt in `tx`; on a concurrent duplicate (the unique scope), returns the
    /// replay of the winner instead (and the caller's work is rolled back).
    pub(crate) async fn put_receipt(
        &self,
        tx: &mut nexus_store::Tx,
        idem: &Idempotency,
        status: u16,
        body: &Value,
        now: i64,
    ) -> KernelResult<Option<(u16, Value)>> {
        match tx
            .idempotency_put(NewReceipt {
                scope_hash: idem.scope_hash.clone(),
                envelope_sha256: idem.envelope_sha256.clone(),
                status: i64::from(status),
                body: body.to_string(),
                expires_at: now + RECEIPT_TTL_MS,
                created_at: now,
            })
            .await
        {
            Ok(_) => Ok(None),
            Err(StoreError::Conflict(_)) => {
                let receipt = self
                    .store
                    .idempotency_get(&idem.scope_hash, now)
                    .await?
                    .ok_or_else(|| refuse(Code::IdempotencyEnvelopeMismatch, "the Idempotency-Key is in use"))?;
                Ok(Some(idem.replay(&receipt)?))
            }
            Err(e) => Err(e.into()),
        }
    }
}
