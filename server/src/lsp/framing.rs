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
        if let Some((name, v)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                len = Some(v.trim().parse().ok());
            }
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

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Serves `service` on stdin/stdout through the checks above.
pub async fn serve_filtered(service: LspService<Backend>, socket: ClientSocket) {
    let (mut to_server, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, from_server) = tokio::io::duplex(1 << 20);
    let (frames_tx, mut frames_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();

    let errors = frames_tx.clone();
    tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
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
    let forward = tokio::spawn(async move {
        let mut out = BufReader::new(from_server);
        while let Frame::Body(body) = read_frame(&mut out).await {
            if frames_tx.send(frame(&body)).is_err() {
                break;
            }
        }
        // An empty frame tells the writer that the server has finished.
        let _ = frames_tx.send(Vec::new());
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(bytes) = frames_rx.recv().await {
            if bytes.is_empty() || stdout.write_all(&bytes).await.is_err() {
                break;
            }
            let _ = stdout.flush().await;
        }
    });
    Server::new(server_in, server_out, socket).serve(service).await;
    let _ = forward.await;
    let _ = writer.await;
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
