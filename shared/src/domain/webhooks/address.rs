//! Where a webhook may be sent: `https` to a public address only. A URL is checked when it is
//! registered and again at each delivery, and every address its host resolves to is checked at
//! connect time (a name that resolves to loopback is refused then, not only when registered).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// Why a URL or an address is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the url must be an absolute https URL: {0}")]
    NotHttps(String),
    #[error("the url must not carry a user name or password")]
    Credentials,
    #[error("the url's address {0} is {1}: webhooks are sent to public addresses only")]
    Address(IpAddr, &'static str),
    #[error("the url is longer than {0} characters")]
    TooLong(usize),
}

/// Whether local-api may send to `http` on loopback (its tests and walk-through, behind an
/// explicit flag); deployed, never.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    #[default]
    PublicHttpsOnly,
    AlsoLoopbackHttp,
}

/// The class that makes an address unreachable for webhooks, if any.
pub fn refused_class(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4_class(v4),
            None => v6_class(v6),
        },
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        // 169.254/16 holds the instance metadata service and the Lambda runtime's API.
        Some("link-local")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("multicast or reserved")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else {
        None
    }
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast or reserved")
    } else if let Some(v4) = ip.to_ipv4() {
        // The deprecated IPv4-compatible form (::a.b.c.d) reaches the IPv4 address.
        v4_class(v4).or(Some("IPv4-compatible"))
    } else {
        None
    }
}

/// Whether `ip` may be connected to for a delivery.
pub fn check_address(ip: IpAddr, reach: Reach) -> Result<(), Refused> {
    match refused_class(ip) {
        Some("loopback") if reach == Reach::AlsoLoopbackHttp => Ok(()),
        Some(class) => Err(Refused::Address(ip, class)),
        None => Ok(()),
    }
}

/// A webhook URL checked: absolute, `https` (or `http` to loopback where allowed), no
/// credentials, and an IP literal host a public address. A name is checked at connect time.
pub fn check_url(text: &str, reach: Reach) -> Result<Url, Refused> {
    if text.len() > super::MAX_URL {
        return Err(Refused::TooLong(super::MAX_URL));
    }
    // Written as sent: `https://` (the parser would also take `HTTPS:` or `https:host`).
    let http_allowed = reach == Reach::AlsoLoopbackHttp && text.starts_with("http://");
    if !text.starts_with("https://") && !http_allowed {
        return Err(Refused::NotHttps("it must start with https://".into()));
    }
    let url = Url::parse(text).map_err(|e| Refused::NotHttps(e.to_string()))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused::Credentials);
    }
    let literal = match url.host() {
        Some(Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        Some(Host::Domain(_)) => None,
        None => return Err(Refused::NotHttps("it has no host".into())),
    };
    let loopback =
        literal.is_some_and(|ip| ip.is_loopback()) || url.host_str() == Some("localhost");
    match url.scheme() {
        "https" => {}
        "http" if reach == Reach::AlsoLoopbackHttp && loopback => {}
        other => return Err(Refused::NotHttps(format!("its scheme is {other}"))),
    }
    if let Some(ip) = literal {
        check_address(ip, reach)?;
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> bool {
        check_url(url, Reach::PublicHttpsOnly).is_err()
    }

    #[test]
    fn every_private_class_is_refused_in_every_spelling() {
        for url in [
            "http://example.com/hook",
            "ftp://example.com/",
            "https://user:pw@example.com/",
            "https://127.0.0.1/",
            "https://127.1.2.3:8443/",
            "https://2130706433/",
            "https://0x7f.0.0.1/",
            "https://0177.0.0.1/",
            "https://10.0.0.1/",
            "https://172.16.5.4/",
            "https://172.31.255.255/",
            "https://192.168.1.1/",
            "https://169.254.169.254/latest/meta-data/",
            "https://0.0.0.0/",
            "https://224.0.0.1/",
            "https://255.255.255.255/",
            "https://100.64.0.1/",
            "https://[::1]/",
            "https://[::]/",
            "https://[fc00::1]/",
            "https://[fd12:3456::1]/",
            "https://[fe80::1]/",
            "https://[ff02::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:169.254.169.254]/",
            "https://[::127.0.0.1]/",
            "not a url",
            "HTTPS://example.com/hook",
            "https:example.com/hook",
        ] {
            assert!(refused(url), "{url} was let through");
        }
        for url in [
            "https://example.com/hook",
            "https://8.8.8.8/x",
            "https://[2606:4700::1111]/",
            "https://172.32.0.1/",
        ] {
            assert!(!refused(url), "{url} was refused");
        }
    }

    #[test]
    fn loopback_http_only_behind_the_flag_and_never_a_private_address() {
        let flag = Reach::AlsoLoopbackHttp;
        assert!(check_url("http://127.0.0.1:9000/hook", flag).is_ok());
        assert!(check_url("http://localhost:9000/hook", flag).is_ok());
        assert!(check_url("http://10.0.0.1/hook", flag).is_err());
        assert!(check_url("http://example.com/hook", flag).is_err());
        assert!(check_address("169.254.169.254".parse().unwrap(), flag).is_err());
    }
}
