//! Webhook secrets sealed by the stack's KMS key (`Encrypt`/`Decrypt`, 4 KB at most: a secret
//! is 32 bytes); and the sealer of a function given no key, which refuses rather than keep a
//! secret in the clear.

use crate::application::alert_ports::Sealer;
use async_trait::async_trait;
use aws_sdk_kms::primitives::Blob;

pub struct KmsSealer {
    pub kms: aws_sdk_kms::Client,
    pub key_id: String,
}

fn failed(what: &str, e: impl std::fmt::Display) -> String {
    format!("KMS {what}: {e}")
}

#[async_trait]
impl Sealer for KmsSealer {
    async fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, String> {
        let out = self
            .kms
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
        let out = self
            .kms
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(sealed))
            .send()
            .await
            .map_err(|e| failed("Decrypt", aws_sdk_kms::error::DisplayErrorContext(&e)))?;
        out.plaintext
            .map(Blob::into_inner)
            .ok_or_else(|| failed("Decrypt", "no plaintext"))
    }
}
