//! The machine's own addresses, from `getifaddrs`.

use std::net::IpAddr;

/// Why the machine's interfaces cannot be read: the `getifaddrs` failure, as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub(super) struct InterfacesError(#[from] nix::Error);

/// (interface, address) of every address of every interface, up or down.
pub(super) fn own_addresses() -> Result<Vec<(String, IpAddr)>, InterfacesError> {
    let interfaces = nix::ifaddrs::getifaddrs()?;
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
