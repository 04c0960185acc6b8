//! The one check of which addresses the host connects to on someone else's behalf (A2A push
//! targets, the sandbox's network proxy): public addresses only, never loopback, private,
//! link-local (cloud metadata) or other special-purpose ones (IANA registries, RFC 6890).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public address a host may connect to for someone else (`allow_loopback`:
/// loopback too, for tests). An IPv6
/// address that carries an IPv4 one (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, 6to4
/// `2002:AABB:CCDD::/16`, NAT64 `64:ff9b::/96`, RFC 6052 and 3056) is judged by that IPv4
/// address, so a wrapped `127.0.0.1` or `169.254.169.254` is refused as the plain one is.
pub fn allowed_ip(ip: IpAddr, allow_loopback: bool) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    if ip.is_loopback() {
        return allow_loopback;
    }
    match ip {
        IpAddr::V4(v4) => allowed_v4(v4),
        IpAddr::V6(v6) => allowed_v6(v6),
    }
}

/// Public IPv4 (IANA special-purpose registry, RFC 6890): not private, link-local (cloud
/// metadata), CGNAT, benchmarking, documentation, reserved, multicast or "this network".
fn allowed_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    !(v4.is_private()
        || v4.is_link_local() // 169.254/16, cloud metadata included
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || o[0] == 0
        || o[0] >= 240 // reserved (240/4)
        || (o[0] == 100 && (64..128).contains(&o[1])) // carrier-grade NAT
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking, 198.18/15
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)) // IETF protocol assignments, 192.0.0/24
}

/// Public IPv6 (after [`embedded_v4`] was taken out): not unspecified, multicast, unique or
/// link local, documentation, discard-only, local-use NAT64, or the AWS metadata address.
fn allowed_v6(v6: Ipv6Addr) -> bool {
    let s = v6.segments();
    !(v6.is_unspecified()
        || v6.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link local
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only, 100::/64
        || (s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64, 64:ff9b:1::/48
        || s[0] == 0xfd00 && s[1] == 0x0ec2) // AWS metadata (fd00:ec2::254)
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped and IPv4-compatible (`::a.b.c.d`, not
/// `::` or `::1`), 6to4 (`2002::/16`, bits 16-47) and the NAT64 well-known prefix
/// (`64:ff9b::/96`, the last 32 bits). `None` for any other address.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let last = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(last),
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => None,
        [0, 0, 0, 0, 0, 0, _, _] => Some(last),
        [0x0064, 0xff9b, 0, 0, 0, 0, _, _] => Some(last),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_addresses_are_read_from_their_bits() {
        let v4 = |s: &str| s.parse::<Ipv4Addr>().ok();
        let v6 = |s: &str| s.parse::<Ipv6Addr>().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(embedded_v4(v6("2002:c0a8:101::")), v4("192.168.1.1"));
        assert_eq!(embedded_v4(v6("64:ff9b::c0a8:101")), v4("192.168.1.1"));
        assert_eq!(embedded_v4(v6("::c0a8:101")), v4("192.168.1.1"));
        assert_eq!(embedded_v4(v6("::ffff:c0a8:101")), v4("192.168.1.1"));
        assert_eq!(embedded_v4(v6("::1")), None);
        assert_eq!(embedded_v4(v6("2606:4700::1")), None);
    }
}
