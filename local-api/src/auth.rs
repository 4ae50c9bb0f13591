//! The JWT authorizer's checks, with HS256 and a shared secret standing in for the issuer's keys.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The longest caller id accepted: ids are part of the table's keys, which DynamoDB bounds.
pub use shared::http::MAX_SUB_BYTES;

/// What the authorizer passes on of a valid token: its claims, every value as text, and the
/// scopes it grants (always a list, so the handlers never re-read the flattened claims).
#[derive(Debug, Clone)]
pub struct Authorized {
    pub claims: HashMap<String, String>,
    pub scopes: Option<Vec<String>>,
}

/// Issuer settings, from `LOCAL_JWT_SECRET`, `LOCAL_JWT_ISSUER` and `LOCAL_JWT_AUDIENCE`.
#[derive(Clone)]
pub struct JwtSettings {
    pub secret: String,
    pub issuer: String,
    pub audience: String,
}

impl JwtSettings {
    /// What local-api uses when none of the variables is set (the tests' issuer too).
    pub fn local_default() -> JwtSettings {
        JwtSettings {
            secret: "local-dev-secret".into(),
            issuer: "local-dev".into(),
            audience: "positions-api".into(),
        }
    }

    pub fn from_env() -> JwtSettings {
        let default = JwtSettings::local_default();
        let var = |name: &str, default: String| std::env::var(name).unwrap_or(default);
        JwtSettings {
            secret: var("LOCAL_JWT_SECRET", default.secret),
            issuer: var("LOCAL_JWT_ISSUER", default.issuer),
            audience: var("LOCAL_JWT_AUDIENCE", default.audience),
        }
    }

    /// Verifies `Authorization: Bearer <jwt>` as API Gateway's JWT authorizer does: signature,
    /// `exp` required and strictly in the future, `nbf` if present, `iss` (a string) and `aud`,
    /// no unknown `crit` header parameter. No clock leeway. The caller must be a `sub` string of
    /// 1 to [`MAX_SUB_BYTES`] bytes. Returns the claims as API Gateway passes them: every value
    /// a string; and the scopes of `scope` and `scp` ([`shared::http::granted_scopes`]).
    pub fn authorize(&self, authorization: Option<&str>) -> Option<Authorized> {
        let (scheme, token) = authorization?.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let token = token.trim();
        // jsonwebtoken ignores `crit`; RFC 7515 says a token naming extensions the recipient
        // does not understand must be refused, and this one understands none.
        if header_has_crit(token)? {
            return None;
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let key = DecodingKey::from_secret(self.secret.as_bytes());
        let claims = decode::<Map<String, Value>>(token, &key, &validation)
            .ok()?
            .claims;
        let now = chrono::Utc::now().timestamp();
        let expired = claims
            .get("exp")
            .and_then(Value::as_i64)
            .is_none_or(|exp| exp <= now);
        let issuer_is_text = claims.get("iss").is_some_and(Value::is_string);
        let caller_ok = claims
            .get("sub")
            .and_then(Value::as_str)
            .is_some_and(|sub| !sub.is_empty() && sub.len() <= MAX_SUB_BYTES);
        if expired || !issuer_is_text || !caller_ok {
            return None;
        }
        let scopes = Some(shared::http::granted_scopes(&claims));
        Some(Authorized {
            claims: claims
                .into_iter()
                .map(|(k, v)| (k, claim_text(v)))
                .collect(),
            scopes,
        })
    }

    /// A token for `sub`, valid for `ttl_seconds`.
    pub fn issue(&self, sub: &str, ttl_seconds: i64) -> String {
        self.issue_with_scope(sub, ttl_seconds, None)
    }

    /// A token with a `scope` claim (space-separated scopes, as OAuth servers issue it).
    pub fn issue_with_scope(&self, sub: &str, ttl_seconds: i64, scope: Option<&str>) -> String {
        let now = chrono::Utc::now().timestamp();
        let mut claims = serde_json::json!({
            "sub": sub,
            "iss": self.issuer,
            "aud": self.audience,
            "iat": now,
            "nbf": now,
            "exp": now + ttl_seconds,
        });
        if let Some(scope) = scope {
            claims["scope"] = Value::from(scope);
        }
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

/// Whether the token's header names critical extensions (`crit`); `None` if it is not a JWT.
fn header_has_crit(token: &str) -> Option<bool> {
    use base64::Engine;
    let header = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header.trim_end_matches('='))
        .ok()?;
    let header: Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
    Some(header.contains_key("crit"))
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
        let claims = s
            .authorize(Some(&bearer(&s.issue("alice", 60))))
            .unwrap()
            .claims;
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
        use base64::Engine;
        let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        // Signed correctly, but naming a critical extension nobody here understands.
        let with_crit = {
            let head = b64(json!({"alg": "HS256", "typ": "JWT", "crit": ["exp"]}));
            let message = format!("{head}.{}", b64(ok.clone()));
            let key = EncodingKey::from_secret(b"s");
            let signature =
                jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::HS256).unwrap();
            format!("{message}.{signature}")
        };
        let bad = [
            bearer(&with_crit),
            bearer(&s.sign(&with("exp", json!(now)))),
            bearer(&s.sign(&with("iss", json!(["iss"])))),
            bearer(&s.sign(&with("sub", json!(123)))),
            bearer(&s.sign(&with("sub", json!(true)))),
            bearer(&s.sign(&with("sub", json!(null)))),
            bearer(&s.sign(&with("sub", json!("")))),
            bearer(&s.sign(&with("sub", json!("x".repeat(257))))),
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
