//! `--healthz-port`: `/healthz` answers 200 while the process runs, `/readyz`
//! 200 once the subnet file is written and the data path set up, else 503
//! (flannel's probes); and systemd's `READY=1` at the same moment.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Serves the probes on their own thread; an error only if the port cannot be bound.
pub fn serve(addr: SocketAddr, ready: Arc<AtomicBool>) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    std::thread::Builder::new()
        .name("healthz".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                let _ = answer(conn, &ready);
            }
        })?;
    Ok(())
}

fn answer(mut conn: TcpStream, ready: &AtomicBool) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    BufReader::new(std::io::Read::take(&conn, 4096)).read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = match path {
        "/healthz" => ("200 OK", "flanneld is running"),
        "/readyz" if ready.load(Ordering::SeqCst) => ("200 OK", "flanneld is ready"),
        "/readyz" => ("503 Service Unavailable", "flanneld is not ready"),
        _ => ("404 Not Found", "not found"),
    };
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Tells systemd (Type=notify) the daemon is ready, when it runs under one.
pub fn notify_ready() {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let sock = match std::os::unix::net::UnixDatagram::unbound() {
        Ok(s) => s,
        Err(_) => return,
    };
    let bytes = path.as_encoded_bytes();
    let sent = if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name)
            .and_then(|a| sock.send_to_addr(b"READY=1", &a))
    } else {
        sock.send_to(b"READY=1", std::path::Path::new(&path))
    };
    if let Err(e) = sent {
        super::log(format!("sd_notify failed: {e}"));
    }
}
