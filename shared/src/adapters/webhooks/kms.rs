//! Webhook secrets sealed by the stack's KMS key (`Encrypt`/`Decrypt`, 4 KB at most: a secret
//! is 32 bytes); an opened secret kept in the container's memory for five minutes.

use super::clients::OnFirstUse;
use crate::application::alert_ports::Sealer;
use async_trait::async_trait;
use aws_sdk_kms::primitives::Blob;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a container keeps a secret it opened: deliveries to one endpoint within it cost
/// one `Decrypt`, not one each (KMS bills per request).
pub const OPENED_KEPT: Duration = Duration::from_secs(300);

/// Opened secrets by their sealed bytes, with when each was opened.
type Opened = HashMap<Vec<u8>, (Vec<u8>, Instant)>;

pub struct KmsSealer {
    kms: OnFirstUse<aws_sdk_kms::Client>,
    key_id: String,
    opened: Mutex<Opened>,
}

impl KmsSealer {
    pub fn new(kms: OnFirstUse<aws_sdk_kms::Client>, key_id: String) -> KmsSealer {
        KmsSealer {
            kms,
            key_id,
            opened: Mutex::default(),
        }
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> String {
    format!("KMS {what}: {e}")
}

#[async_trait]
impl Sealer for KmsSealer {
    async fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, String> {
        let out = self
            .kms
            .get()
            .encrypt()
            .key_id(&self.key_id)
            .plaintext(Blob::new(plain))
            .send()
            .await
            .map_err(|e| failed("Encrypt", aws_sdk_kms::error::DisplayErrorContext(&e)))?;
        out.ciphertext_blob
            .map(Blob::into_inner)
            .ok_or_else(|| failed("Encrypt", "no ciphertext"))
    }

    async fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, String> {
        let kept = self.opened.lock().ok().and_then(|opened| {
            opened
                .get(sealed)
                .filter(|(_, at)| at.elapsed() < OPENED_KEPT)
                .map(|(plain, _)| plain.clone())
        });
        if let Some(plain) = kept {
            return Ok(plain);
        }
        let out = self
            .kms
            .get()
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(sealed))
            .send()
            .await
            .map_err(|e| failed("Decrypt", aws_sdk_kms::error::DisplayErrorContext(&e)))?;
        let plain = out
            .plaintext
            .map(Blob::into_inner)
            .ok_or_else(|| failed("Decrypt", "no plaintext"))?;
        if let Ok(mut opened) = self.opened.lock() {
            opened.retain(|_, (_, at)| at.elapsed() < OPENED_KEPT);
            opened.insert(sealed.to_vec(), (plain.clone(), Instant::now()));
        }
        Ok(plain)
    }
}
