//! The machine's own addresses, from `getifaddrs`.

use std::net::IpAddr;

/// (interface, address) of every address of every interface, up or down.
pub(super) fn own_addresses() -> Result<Vec<(String, IpAddr)>, String> {
    let interfaces = nix::ifaddrs::getifaddrs().map_err(|err| err.to_string())?;
    Ok(interfaces
        .filter_map(|entry| {
            let address = entry.address?;
            let ip = match (address.as_sockaddr_in(), address.as_sockaddr_in6()) {
                (Some(v4), _) => IpAddr::V4(v4.ip()),
                (_, Some(v6)) => IpAddr::V6(v6.ip()),
                _ => return None,
            };
            Some((entry.interface_name, ip))
        })
        .collect())
}
