//! Standard Webhooks signatures: `v1,` and base64 of HMAC-SHA256 over `id.timestamp.body`,
//! keyed by the secret's bytes; a secret is `whsec_` and base64 of 32 random bytes.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const SECRET_PREFIX: &str = "whsec_";
/// The random bytes of a secret (the specification asks for 24 to 64).
pub const SECRET_BYTES: usize = 32;

/// A new secret's bytes, from the operating system's generator.
pub fn new_secret() -> Result<Vec<u8>, getrandom::Error> {
    let mut bytes = vec![0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(bytes)
}

/// The secret as shown to its user, once.
pub fn secret_text(bytes: &[u8]) -> String {
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// One signature: `v1,` + base64(HMAC-SHA256(secret, id + "." + timestamp + "." + body)).
pub fn signature(secret: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes a key of any size");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body.as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header: a signature per secret that signs, space-separated (during a
/// rotation, the new one's first).
pub fn signature_header<'a>(
    secrets: impl IntoIterator<Item = &'a [u8]>,
    id: &str,
    timestamp: i64,
    body: &str,
) -> String {
    secrets
        .into_iter()
        .map(|secret| signature(secret, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specifications_example_signs_as_published() {
        // The Standard Webhooks specification's own test vector.
        let secret = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_secret_is_prefixed_base64_of_32_fresh_bytes() {
        let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
        assert_ne!(a, b);
        let text = secret_text(&a);
        assert!(text.starts_with("whsec_"));
        assert_eq!(STANDARD.decode(&text[6..]).unwrap(), a);
        let header = signature_header([a.as_slice(), b.as_slice()], "id", 1, "{}");
        assert_eq!(header.split(' ').count(), 2);
    }
}
