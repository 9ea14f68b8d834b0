//! The language server's stdio, guarded: every frame from the client is checked against
//! JSON-RPC 2.0 before tower-lsp sees it, because tower-lsp ends the whole server on a body it
//! cannot decode. A body that is not JSON gets -32700 (Parse error), JSON that is not a
//! request, a notification or a response gets -32600 (Invalid Request), both with `id: null`
//! unless the object carried a valid id, and the server goes on; only valid messages are
//! forwarded. Unknown methods get -32601 from tower-lsp itself; notifications never get an answer.

use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tower_lsp_server::{ClientSocket, LspService, Server};

use super::Backend;

/// The largest body accepted (a bigger `Content-Length` is read and dropped, not allocated).
const MAX_BODY: usize = 256 << 20;

/// What to do with one frame from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Forward,
    /// Answer the client with this error response; the frame goes no further.
    Reply(Json),
}

fn error(id: Json, code: i64, message: &str) -> Verdict {
    Verdict::Reply(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// A JSON-RPC id: a string, an integer or null.
fn valid_id(id: &Json) -> bool {
    id.is_string() || id.is_i64() || id.is_null()
}

/// Checks one body against JSON-RPC 2.0 (section 4: request and notification objects; 5:
/// responses, which a client sends to the server's own requests). Batches are refused: LSP
/// has none.
pub fn classify(body: &[u8]) -> Verdict {
    let Ok(value) = serde_json::from_slice::<Json>(body) else {
        return error(Json::Null, -32700, "Parse error: the message is not JSON");
    };
    let Json::Object(obj) = &value else {
        let what = if value.is_array() { "a batch (LSP has none)" } else { "not an object" };
        return error(Json::Null, -32600, &format!("Invalid Request: the message is {what}"));
    };
    let id = obj.get("id");
    let reply_id = id.filter(|i| valid_id(i)).cloned().unwrap_or(Json::Null);
    if obj.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return error(reply_id, -32600, "Invalid Request: `jsonrpc` must be \"2.0\"");
    }
    if id.is_some_and(|i| !valid_id(i)) {
        return error(Json::Null, -32600, "Invalid Request: `id` must be a string, an integer or null");
    }
    match obj.get("method") {
        Some(Json::String(_)) => {
            // `null` params are tolerated: some clients send them for "no params".
            if obj.get("params").is_some_and(|p| !(p.is_object() || p.is_array() || p.is_null())) {
                return error(reply_id, -32600, "Invalid Request: `params` must be an object or an array");
            }
            Verdict::Forward
        }
        Some(_) => error(reply_id, -32600, "Invalid Request: `method` must be a string"),
        // A response to one of the server's requests.
        None if id.is_some() && (obj.contains_key("result") != obj.contains_key("error")) => {
            if obj.get("error").is_some_and(|e| !e.get("code").is_some_and(Json::is_i64) || !e.get("message").is_some_and(Json::is_string))
            {
                return error(reply_id, -32600, "Invalid Request: a response's `error` needs an integer `code` and a string `message`");
            }
            Verdict::Forward
        }
        None => error(reply_id, -32600, "Invalid Request: no `method`, and not a response"),
    }
}

/// The outcome of reading one frame.
enum Frame {
    Body(Vec<u8>),
    /// A frame that cannot be read as one (no or bad `Content-Length`, oversized): answered
    /// as a parse error.
    Bad,
    End,
}

/// Reads one `Content-Length` frame.
async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R) -> Frame {
    let mut len: Option<Option<usize>> = None;
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return Frame::End,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end();
        if line.is_empty() {
            if len.is_some() {
                break;
            }
            continue;
        }
        if let Some(length) = content_length(line) {
            len = Some(length);
        }
    }
    let Some(Some(len)) = len else { return Frame::Bad };
    if len > MAX_BODY {
        let mut skip = reader.take(len as u64);
        return match tokio::io::copy(&mut skip, &mut tokio::io::sink()).await {
            Ok(n) if n == len as u64 => Frame::Bad,
            _ => Frame::End,
        };
    }
    let mut body = vec![0u8; len];
    match reader.read_exact(&mut body).await {
        Ok(_) => Frame::Body(body),
        Err(_) => Frame::End,
    }
}

/// The length a `Content-Length` header line gives (`None` inside when it is not a number),
/// or `None` for another line. Read in both directions: the client's frames and the server's.
fn content_length(line: &str) -> Option<Option<usize>> {
    let (name, value) = line.split_once(':')?;
    name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Serves `service` on stdin/stdout through the checks above. One task writes stdout: the
/// server's messages, whole, with the error replies to bad frames between them.
pub async fn serve_filtered(service: LspService<Backend>, socket: ClientSocket) {
    let (mut to_server, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, mut from_server) = tokio::io::duplex(1 << 20);
    let (errors, mut errors_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();

    tokio::spawn(async move {
        let mut stdin = BufReader::new(super::stdio::input());
        loop {
            let verdict = match read_frame(&mut stdin).await {
                Frame::End => break,
                Frame::Bad => error(Json::Null, -32700, "Parse error: a frame without a valid Content-Length header"),
                Frame::Body(body) => match classify(&body) {
                    Verdict::Forward => {
                        if to_server.write_all(&frame(&body)).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    reply => reply,
                },
            };
            if let Verdict::Reply(reply) = verdict {
                let _ = errors.send(frame(reply.to_string().as_bytes()));
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut stdout = super::stdio::output();
        let mut frames = Frames::default();
        loop {
            while let Some(message) = frames.next() {
                if stdout.write_all(&message).await.is_err() {
                    return;
                }
                let _ = stdout.flush().await;
            }
            // Both branches are cancel-safe: a read that lost the race has read nothing, and
            // what was read waits in `frames` until its frame is whole.
            let reply = tokio::select! {
                read = from_server.read_buf(&mut frames.read) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => continue,
                },
                Some(reply) = errors_rx.recv() => reply,
            };
            if stdout.write_all(&reply).await.is_err() {
                return;
            }
            let _ = stdout.flush().await;
        }
        // The server has finished: what it wrote last is out, and so are the error replies
        // still waiting (an `exit` right after a bad frame can end the server before the
        // loop above took them).
        if !frames.read.is_empty() {
            let _ = stdout.write_all(&frames.read).await;
        }
        while let Ok(reply) = errors_rx.try_recv() {
            if stdout.write_all(&reply).await.is_err() {
                break;
            }
        }
        let _ = stdout.flush().await;
    });
    Server::new(server_in, server_out, socket).serve(service).await;
    let _ = writer.await;
}

/// The server's output as read so far, cut into whole `Content-Length` frames.
#[derive(Default)]
struct Frames {
    read: Vec<u8>,
}

impl Frames {
    /// The first whole frame read (header and body), if there is one. A header without a
    /// length (the server never writes one) lets everything read through as it is.
    fn next(&mut self) -> Option<Vec<u8>> {
        let header_end = self.read.windows(4).position(|w| w == b"\r\n\r\n")?;
        let length = std::str::from_utf8(&self.read[..header_end])
            .ok()
            .and_then(|header| header.split("\r\n").find_map(|line| content_length(line).flatten()));
        let end = match length {
            Some(length) => header_end + 4 + length,
            None => self.read.len(),
        };
        if self.read.len() < end {
            return None;
        }
        let rest = self.read.split_off(end);
        Some(std::mem::replace(&mut self.read, rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<(i64, Json)> {
        match classify(body.as_bytes()) {
            Verdict::Forward => None,
            Verdict::Reply(r) => Some((r["error"]["code"].as_i64().unwrap_or(0), r["id"].clone())),
        }
    }

    #[test]
    fn the_servers_output_is_cut_into_whole_frames() {
        let mut frames = Frames::default();
        frames.read.extend_from_slice(b"Content-Length: 2\r\n\r\n{}content-length:5\r\n\r\n[1,");
        assert_eq!(frames.next().as_deref(), Some(&b"Content-Length: 2\r\n\r\n{}"[..]));
        // The second is not whole yet: it waits, and nothing else is given out.
        assert_eq!(frames.next(), None);
        frames.read.extend_from_slice(b"2]Content-Len");
        assert_eq!(frames.next().as_deref(), Some(&b"content-length:5\r\n\r\n[1,2]"[..]));
        assert_eq!(frames.next(), None);
        assert_eq!(frames.read, b"Content-Len");
        // A header without a length is let through as it is, not held forever.
        let mut odd = Frames { read: b"X-Other: 1\r\n\r\nbody".to_vec() };
        assert_eq!(odd.next().as_deref(), Some(&b"X-Other: 1\r\n\r\nbody"[..]));
        assert!(odd.read.is_empty());
    }

    #[test]
    fn json_rpc_errors_to_the_letter() {
        assert_eq!(code("{not json"), Some((-32700, Json::Null)));
        assert_eq!(code(""), Some((-32700, Json::Null)));
        for body in ["null", "[]", "123", "\"str\"", "{}", "true", r#"[{"jsonrpc":"2.0","method":"x"}]"#] {
            assert_eq!(code(body), Some((-32600, Json::Null)), "{body}");
        }
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":7}"#), Some((-32600, json!(7))));
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":"a","method":"x"}"#), Some((-32600, json!("a"))));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#), Some((-32600, Json::Null)));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), Some((-32600, Json::Null)));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":2,"method":3}"#), Some((-32600, json!(2))));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":2,"method":"x","params":5}"#), Some((-32600, json!(2))));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":2,"result":1,"error":{"code":1,"message":"m"}}"#), Some((-32600, json!(2))));
        // Requests, notifications and responses go through.
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"c","result":null}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#), None);
    }
}
