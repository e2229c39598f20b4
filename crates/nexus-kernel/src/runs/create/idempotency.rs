//! Idempotency keys (errors-and-auth.md §6): a key bound to its scope (member, route, ids) and
//! its envelope's digest; a receipt kept 24 hours answers a repeat with `replayed: true`.

use nexus_core::codes::Code;
use nexus_core::jcs;
use nexus_store::prelude::*;
use nexus_store::{NewReceipt, StoreError};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::refuse;

/// Receipts are kept for 24 hours.
const RECEIPT_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// A member door's answer under an optional `Idempotency-Key`: the envelope applied now, or
/// the answer an earlier use of the key got. The server picks the status of each.
#[derive(Debug, Clone, PartialEq)]
pub enum Idempotent<T> {
    /// The envelope was applied by this call.
    Fresh(T),
    /// A repeat of an earlier key with the same envelope: the first answer as it was stored
    /// (free JSON text, replayed byte for byte) with `replayed: true` added last.
    Replayed(Value),
}

impl<T> Idempotent<T> {
    /// The reply of an envelope applied by this call (`None` for a replay).
    pub fn fresh(self) -> Option<T> {
        match self {
            Idempotent::Fresh(reply) => Some(reply),
            Idempotent::Replayed(_) => None,
        }
    }
}

/// What a receipt row records of its first answer in its `status` column (the store keeps the
/// number the server answered with; nothing reads it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstAnswer {
    /// A resource was made (create).
    Created,
    /// Work was added to one (append).
    Done,
}

impl FirstAnswer {
    fn recorded(self) -> i64 {
        match self {
            FirstAnswer::Created => 201,
            FirstAnswer::Done => 200,
        }
    }
}

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

    /// The door's key, when the request gave one (its grammar checked here).
    pub(crate) fn of_door(
        member: Uuid,
        route: &str,
        ids: &[Uuid],
        key: Option<&str>,
        body: &Value,
    ) -> KernelResult<Option<Idempotency>> {
        key.map(|k| Idempotency::new(member, route, ids, k, body)).transpose()
    }

    /// The replay of a stored receipt (its body with `replayed: true`), or 409 on a different
    /// envelope.
    pub(crate) fn replayed(&self, receipt: &nexus_store::ReceiptRow) -> KernelResult<Value> {
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
        Ok(body)
    }

    /// [`Idempotency::replayed`] with the status a replay is served with, for the doors that
    /// still answer `(status, body)`.
    pub(crate) fn replay(&self, receipt: &nexus_store::ReceiptRow) -> KernelResult<(u16, Value)> {
        Ok((200, self.replayed(receipt)?))
    }
}

/// The replay of a receipt stored since the key was first checked (a concurrent twin won),
/// read inside the unit of work.
pub(crate) async fn replay_in(
    tx: &mut nexus_store::Tx,
    idem: Option<&Idempotency>,
    now: i64,
) -> KernelResult<Option<Value>> {
    let Some(idem) = idem else { return Ok(None) };
    match tx.idempotency_get(&idem.scope_hash, now).await? {
        Some(receipt) => Ok(Some(idem.replayed(&receipt)?)),
        None => Ok(None),
    }
}

impl Kernel {
    /// The replay of the receipt an earlier use of the door's key left, read before any work.
    pub(crate) async fn stored_replay(&self, idem: Option<&Idempotency>) -> KernelResult<Option<Value>> {
        let Some(idem) = idem else { return Ok(None) };
        match self.store.idempotency_get(&idem.scope_hash, self.now_ms()).await? {
            Some(receipt) => Ok(Some(idem.replayed(&receipt)?)),
            None => Ok(None),
        }
    }

    /// Keeps `reply` as the key's receipt in `tx` (its JSON text is what a replay serves); on a
    /// concurrent duplicate (the unique scope), returns the winner's replay instead (and the
    /// caller's work is rolled back). `None` when the door was given no key.
    pub(crate) async fn keep_receipt<T: serde::Serialize>(
        &self,
        tx: &mut nexus_store::Tx,
        idem: Option<&Idempotency>,
        first: FirstAnswer,
        reply: &T,
        now: i64,
    ) -> KernelResult<Option<Value>> {
        let Some(idem) = idem else { return Ok(None) };
        let body = serde_json::to_string(reply).map_err(|e| {
            crate::error::KernelError::new(Code::InternalError, format!("a reply did not serialize: {e}"))
        })?;
        self.put_receipt_text(tx, idem, first.recorded(), body, now).await
    }

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
        let replay = self
            .put_receipt_text(tx, idem, i64::from(status), body.to_string(), now)
            .await?;
        Ok(replay.map(|body| (200, body)))
    }

    async fn put_receipt_text(
        &self,
        tx: &mut nexus_store::Tx,
        idem: &Idempotency,
        status: i64,
        body: String,
        now: i64,
    ) -> KernelResult<Option<Value>> {
        match tx
            .idempotency_put(NewReceipt {
                scope_hash: idem.scope_hash.clone(),
                envelope_sha256: idem.envelope_sha256.clone(),
                status,
                body,
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
                Ok(Some(idem.replayed(&receipt)?))
            }
            Err(e) => Err(e.into()),
        }
    }
}
