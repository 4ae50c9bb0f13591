//! The page (`web/`), served without a token at `/` and by file name beside it, as any static
//! host would serve the same files. The files are part of the binary: no build step, nothing
//! read from disk at run time.

use lambda_http::http::{header, HeaderValue, Method, StatusCode};
use lambda_http::{Body, Response};
use shared::ApiError;

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// Each served path, its media type and its contents.
pub const FILES: &[(&str, &str, &str)] = &[
    ("/", HTML, include_str!("../../web/index.html")),
    ("/index.html", HTML, include_str!("../../web/index.html")),
    ("/app.js", JS, include_str!("../../web/app.js")),
    ("/alerts.js", JS, include_str!("../../web/alerts.js")),
    ("/api.js", JS, include_str!("../../web/api.js")),
    ("/charts.js", JS, include_str!("../../web/charts.js")),
    ("/over-time.js", JS, include_str!("../../web/over-time.js")),
    ("/format.js", JS, include_str!("../../web/format.js")),
    ("/wallet.js", JS, include_str!("../../web/wallet.js")),
    ("/style.css", CSS, include_str!("../../web/style.css")),
];

/// The page's own scripts and styles only; the API may live on another origin.
const POLICY: &str = "default-src 'self'; connect-src *; img-src 'self' data:; \
                      frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The answer for `path` if it is one of the page's files: the file for GET (and HEAD), 405
/// for another method.
pub fn answer(method: &Method, path: &str) -> Option<Result<Response<Body>, ApiError>> {
    let (_, media, text) = FILES.iter().find(|(p, _, _)| *p == path)?;
    if method != Method::GET && method != Method::HEAD {
        return Some(Err(ApiError::MethodNotAllowed {
            allow: "GET, HEAD".into(),
        }));
    }
    let mut response = Response::new(Body::Text((*text).to_string()));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Some(Ok(response))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file added to `web/` is served too (the tests' own folder aside).
    #[test]
    fn every_file_of_the_page_is_served() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                continue;
            }
            let name = entry.file_name().into_string().unwrap();
            let path = format!("/{name}");
            let (_, _, text) = FILES
                .iter()
                .find(|(p, _, _)| *p == path)
                .unwrap_or_else(|| panic!("{name} is not served"));
            assert_eq!(*text, std::fs::read_to_string(entry.path()).unwrap());
        }
        assert!(answer(&Method::GET, "/").unwrap().is_ok());
        assert!(answer(&Method::POST, "/app.js").unwrap().is_err());
        assert!(answer(&Method::GET, "/positions").is_none());
    }
}
