use super::*;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;

#[test]
fn a_tcp_socket_counts_the_bytes_the_kernel_took() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let peer = Peer::Tcp(vec![address]);
    let mut client = std::net::TcpStream::connect(address).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let mut probe = SocketProbe::at(peer, client.as_raw_fd()).unwrap();
    assert_eq!(probe.fd, client.as_raw_fd());
    assert_eq!(probe.taken(0), Some(0));
    client.write_all(&[7; 1000]).unwrap();
    let mut buffer = [0; 1000];
    server.read_exact(&mut buffer).unwrap();
    assert_eq!(probe.taken(1000), Some(1000));
    drop(client);
    assert_eq!(probe.taken(1000), None, "a closed socket cannot vouch");
}

#[test]
fn a_unix_socket_counts_only_once_the_peer_has_read_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tee.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let peer = Peer::Unix(path.clone());
    let mut client = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let mut probe = SocketProbe::at(peer, client.as_raw_fd()).unwrap();
    client.write_all(&[7; 100]).unwrap();
    assert_eq!(probe.taken(100), Some(0), "the peer has not read yet");
    let mut buffer = [0; 100];
    server.read_exact(&mut buffer).unwrap();
    assert_eq!(probe.taken(100), Some(0), "drained, but not settled");
    std::thread::sleep(SETTLE);
    assert_eq!(probe.taken(100), Some(100));
}

#[test]
fn sockets_to_other_peers_are_not_mistaken_for_the_tee() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let peer = Peer::Tcp(vec![listener.local_addr().unwrap()]);
    let unrelated = std::net::TcpStream::connect(other.local_addr().unwrap()).unwrap();
    assert!(SocketProbe::at(peer, unrelated.as_raw_fd()).is_none());
    assert!(
        SocketProbe::at(Peer::Tcp(Vec::new()), -1).is_none(),
        "no descriptor"
    );
}
