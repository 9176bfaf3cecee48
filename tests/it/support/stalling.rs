//! A server on 127.0.0.1 that accepts connections and never answers: a web page, a search
//! provider, a GitHub API or a collector that hangs.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A server on 127.0.0.1 that accepts every connection, reads the request and never answers.
/// It keeps the connections it accepted, and says how many it saw.
pub(crate) struct Stalling {
    addr: SocketAddr,
    accepted: Arc<Mutex<Vec<TcpStream>>>,
}

impl Stalling {
    pub(crate) fn start() -> Stalling {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let kept = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = stream.try_clone().unwrap();
                // Swallow the request so the client is left waiting for the answer alone.
                std::thread::spawn(move || {
                    let mut sink = [0u8; 4096];
                    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                });
                kept.lock().unwrap().push(stream);
            }
        });
        Stalling { addr, accepted }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn connections(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }
}
