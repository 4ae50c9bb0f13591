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
    #[error("the url's host {0} names this machine: webhooks are sent to public addresses only")]
    LocalName(String),
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

/// The IPv4 special-purpose blocks (IANA's registry) that are not globally reachable, and the
/// other classes no delivery goes to, each with its name.
const V4_REFUSED: &[([u8; 4], u8, &str)] = &[
    ([0, 0, 0, 0], 8, "unspecified (this network)"),
    ([10, 0, 0, 0], 8, "private"),
    ([100, 64, 0, 0], 10, "shared (carrier-grade NAT)"),
    ([127, 0, 0, 0], 8, "loopback"),
    // 169.254/16 holds the instance metadata service and the Lambda runtime's API.
    ([169, 254, 0, 0], 16, "link-local"),
    ([172, 16, 0, 0], 12, "private"),
    ([192, 0, 0, 0], 24, "IETF protocol assignments"),
    ([192, 0, 2, 0], 24, "documentation (TEST-NET-1)"),
    ([192, 88, 99, 0], 24, "6to4 relay anycast (deprecated)"),
    ([192, 168, 0, 0], 16, "private"),
    ([198, 18, 0, 0], 15, "benchmarking"),
    ([198, 51, 100, 0], 24, "documentation (TEST-NET-2)"),
    ([203, 0, 113, 0], 24, "documentation (TEST-NET-3)"),
    ([224, 0, 0, 0], 4, "multicast"),
    ([255, 255, 255, 255], 32, "broadcast"),
    ([240, 0, 0, 0], 4, "reserved"),
];

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    V4_REFUSED.iter().find_map(|(net, len, class)| {
        let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
        (bits & mask == u32::from_be_bytes(*net) & mask).then_some(*class)
    })
}

/// The IPv6 special-purpose blocks (IANA's registry) that are not globally reachable, and the
/// other classes no delivery goes to, each with its name. Blocks that embed an IPv4 address
/// (NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by it in [`v6_class`].
const V6_REFUSED: &[(u128, u8, &str)] = &[
    (0, 128, "unspecified"),
    (1, 128, "loopback"),
    // ::ffff:0:0:0/96, IPv4-translated (SIIT).
    (0xffff << 48, 96, "IPv4-translated"),
    (0x0064_ff9b_0001 << 80, 48, "local-use NAT64"),
    (0x0100 << 112, 64, "discard-only"),
    // 2001::/23 holds Teredo (2001::/32), benchmarking (2001:2::/48) and ORCHID.
    (
        0x2001 << 112,
        23,
        "IETF protocol assignments (Teredo, benchmarking)",
    ),
    (0x2001_0db8 << 96, 32, "documentation"),
    (0x3fff << 112, 20, "documentation"),
    (0x5f00 << 112, 16, "segment routing (SRv6)"),
    (0xfc00 << 112, 7, "private (unique local)"),
    (0xfe80 << 112, 10, "link-local"),
    (0xfec0 << 112, 10, "site-local (deprecated)"),
    (0xff00 << 112, 8, "multicast"),
];

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    let within = |net: u128, len: u8| {
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        bits & mask == net & mask
    };
    if let Some((_, _, class)) = V6_REFUSED.iter().find(|(net, len, _)| within(*net, *len)) {
        return Some(class);
    }
    // An address that embeds an IPv4 one reaches it: refused where that one is.
    let embedded = if within(0x0064_ff9b << 96, 96) || within(0, 96) {
        // NAT64's well-known prefix, and the deprecated IPv4-compatible form (::a.b.c.d).
        Some(Ipv4Addr::from(bits as u32))
    } else if within(0x2002 << 112, 16) {
        // 6to4: the IPv4 address in bits 16-47.
        Some(Ipv4Addr::from((bits >> 80) as u32))
    } else {
        None
    };
    match embedded.and_then(v4_class) {
        Some(_) => Some("an IPv6 form of a refused IPv4 address"),
        None if within(0, 96) => Some("IPv4-compatible (deprecated)"),
        None => None,
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
    // `localhost` and its subdomains (RFC 6761), however spelled: this machine.
    let local_name = match url.host() {
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        _ => false,
    };
    let loopback = literal.is_some_and(|ip| ip.is_loopback()) || local_name;
    if local_name && reach == Reach::PublicHttpsOnly {
        return Err(Refused::LocalName(
            url.host_str().unwrap_or_default().into(),
        ));
    }
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
            // Issue 49's: embedded and special-purpose forms, and this machine by name.
            "https://[64:ff9b::7f00:1]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[64:ff9b::a00:1]/",
            "https://[64:ff9b:1::8.8.8.8]/",
            "https://[2002:7f00:1::]/",
            "https://[2002:a9fe:a9fe::1]/",
            "https://[2002:a00:1::]/",
            "https://[::ffff:0:7f00:1]/",
            "https://[::ffff:0:808:808]/",
            "https://[fec0::1]/",
            "https://[100::1]/",
            "https://[2001:db8::1]/",
            "https://[2001::1]/",
            "https://[2001:2::1]/",
            "https://[3fff::1]/",
            "https://198.18.0.1/",
            "https://198.19.255.255/",
            "https://192.0.0.8/",
            "https://192.0.2.1/",
            "https://198.51.100.7/",
            "https://203.0.113.9/",
            "https://192.88.99.1/",
            "https://240.0.0.1/",
            "https://localhost/",
            "https://localhost./",
            "https://LOCALHOST/",
            "https://api.localhost/",
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
            "https://[64:ff9b::808:808]/",
            "https://[2002:808:808::1]/",
            "https://198.20.0.1/",
            "https://192.0.3.1/",
            "https://localhost.example.com/",
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
