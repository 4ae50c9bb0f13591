//! The JWT authorizer's checks, with HS256 and a shared secret standing in for the issuer's keys.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Issuer settings, from `LOCAL_JWT_SECRET`, `LOCAL_JWT_ISSUER` and `LOCAL_JWT_AUDIENCE`.
#[derive(Clone)]
pub struct JwtSettings {
    pub secret: String,
    pub issuer: String,
    pub audience: String,
}

impl JwtSettings {
    pub fn from_env() -> JwtSettings {
        let var =
            |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_string());
        JwtSettings {
            secret: var("LOCAL_JWT_SECRET", "local-dev-secret"),
            issuer: var("LOCAL_JWT_ISSUER", "local-dev"),
            audience: var("LOCAL_JWT_AUDIENCE", "positions-api"),
        }
    }

    /// Verifies `Authorization: Bearer <jwt>` as API Gateway's JWT authorizer does: signature,
    /// `exp` required and in the future, `nbf` if present, `iss` and `aud`. No clock leeway.
    /// Returns the claims as API Gateway passes them: every value a string.
    pub fn authorize(&self, authorization: Option<&str>) -> Option<HashMap<String, String>> {
        let (scheme, token) = authorization?.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let key = DecodingKey::from_secret(self.secret.as_bytes());
        let data = decode::<Map<String, Value>>(token.trim(), &key, &validation).ok()?;
        Some(
            data.claims
                .into_iter()
                .map(|(k, v)| (k, claim_text(v)))
                .collect(),
        )
    }

    /// A token for `sub`, valid for `ttl_seconds`.
    pub fn issue(&self, sub: &str, ttl_seconds: i64) -> String {
        let now = chrono::Utc::now().timestamp();
        let claims = serde_json::json!({
            "sub": sub,
            "iss": self.issuer,
            "aud": self.audience,
            "iat": now,
            "nbf": now,
            "exp": now + ttl_seconds,
        });
        self.sign(&claims)
    }

    /// Signs arbitrary claims (tests use it for expired, early or foreign tokens).
    pub fn sign(&self, claims: &Value) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(self.secret.as_bytes()),
        )
        .expect("HS256 signing with a secret cannot fail")
    }
}

/// A claim as API Gateway renders it: strings as they are, arrays as `[a b]`, others as JSON.
fn claim_text(value: Value) -> String {
    match value {
        Value::String(s) => s,
        Value::Array(items) => {
            let items: Vec<String> = items.into_iter().map(claim_text).collect();
            format!("[{}]", items.join(" "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings() -> JwtSettings {
        JwtSettings {
            secret: "s".into(),
            issuer: "iss".into(),
            audience: "aud".into(),
        }
    }

    fn bearer(token: &str) -> String {
        format!("Bearer {token}")
    }

    #[test]
    fn accepts_its_own_tokens_with_string_claims() {
        let s = settings();
        let claims = s.authorize(Some(&bearer(&s.issue("alice", 60)))).unwrap();
        assert_eq!(claims["sub"], "alice");
        assert!(claims["exp"].parse::<i64>().is_ok());
    }

    #[test]
    fn refuses_every_bad_credential() {
        let s = settings();
        let now = chrono::Utc::now().timestamp();
        let ok = json!({"sub": "a", "iss": "iss", "aud": "aud", "exp": now + 60});
        let with = |k: &str, v: Value| {
            let mut c = ok.clone();
            c[k] = v;
            c
        };
        let mut no_exp = ok.clone();
        no_exp.as_object_mut().unwrap().remove("exp");
        let other_key = JwtSettings {
            secret: "other".into(),
            ..settings()
        };
        let bad = [
            bearer(&s.sign(&with("exp", json!(now - 1)))),
            bearer(&s.sign(&with("nbf", json!(now + 60)))),
            bearer(&s.sign(&with("iss", json!("someone-else")))),
            bearer(&s.sign(&with("aud", json!("other-api")))),
            bearer(&s.sign(&no_exp)),
            bearer(&other_key.sign(&ok)),
            bearer("not.a.jwt"),
            format!("Basic {}", s.sign(&ok)),
            s.sign(&ok),
            String::new(),
        ];
        for header in bad {
            assert!(s.authorize(Some(&header)).is_none(), "{header}");
        }
        assert!(s.authorize(None).is_none());
        assert!(s.authorize(Some(&bearer(&s.sign(&ok)))).is_some());
    }

    #[test]
    fn alg_none_is_refused() {
        let s = settings();
        let now = chrono::Utc::now().timestamp();
        use base64::Engine;
        let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let unsigned = format!(
            "{}.{}.",
            b64(json!({"alg": "none", "typ": "JWT"})),
            b64(json!({"sub": "a", "iss": "iss", "aud": "aud", "exp": now + 60}))
        );
        assert!(s.authorize(Some(&bearer(&unsigned))).is_none());
    }
}
