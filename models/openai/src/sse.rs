//! A server-sent events parser fed with byte chunks as they come off the network.
//!
//! It follows the WHATWG event-stream rules that matter for chat servers: lines end in LF, CR
//! or CRLF (a CRLF may be split across chunks), `data:` with or without a space, several data
//! lines joined by `\n`, comment lines (`:` keep-alives) skipped, a blank line ending an event.
//! llama.cpp's non-standard `error:` line is kept as an event named `error`. Invalid UTF-8
//! becomes U+FFFD (the JSON decoder then sees it).

/// The most bytes one line or event may take, so a broken server cannot exhaust memory.
const MAX_EVENT_BYTES: usize = 16 << 20;

/// One complete event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` name, if any (`error` for llama.cpp's `error:` lines).
    pub event: Option<String>,
    pub data: String,
}

/// The stream broke the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a server-sent event is larger than {limit} bytes")]
pub(crate) struct EventTooLarge {
    pub limit: usize,
}

/// Parser state between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// The bytes of the current, unfinished line.
    line: Vec<u8>,
    /// Data lines of the current event, joined by `\n`.
    data: String,
    has_data: bool,
    event: Option<String>,
    /// The last chunk ended in CR: a LF starting the next one belongs to the same line end.
    after_cr: bool,
    /// At least one line was seen (a byte-order mark may start only the first).
    seen_line: bool,
}

impl SseParser {
    /// Feeds one chunk; complete events are appended to `out`.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&bytes[..end]);
            let was_cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if was_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            self.end_line(out)?;
        }
        self.line.extend_from_slice(bytes);
        self.check_size()
    }

    /// Ends the stream: an event whose lines are complete is delivered even without the blank
    /// line; an unfinished last line (a cut connection) is dropped.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.line.clear();
        self.dispatch(out);
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        let bytes = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&bytes);
        if !self.seen_line {
            self.seen_line = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_string().into();
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => self.push_data(value),
            "event" => self.event = Some(value.to_string()),
            "error" => {
                self.event = Some("error".to_string());
                self.push_data(value);
            }
            _ => {}
        }
        self.check_size()
    }

    fn push_data(&mut self, value: &str) {
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(value);
        self.has_data = true;
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if std::mem::take(&mut self.has_data) {
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
    }

    fn check_size(&self) -> Result<(), EventTooLarge> {
        if self.line.len() + self.data.len() > MAX_EVENT_BYTES {
            return Err(EventTooLarge {
                limit: MAX_EVENT_BYTES,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk, &mut out).unwrap();
        }
        parser.finish(&mut out);
        out
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn data_lines_with_and_without_space() {
        let events = parse(&[b"data: {\"a\":1}\n\ndata:{\"b\":2}\n\ndata:  two spaces\n\n"]);
        assert_eq!(data(&events), ["{\"a\":1}", "{\"b\":2}", " two spaces"]);
        assert!(events.iter().all(|e| e.event.is_none()));
    }

    #[test]
    fn comments_and_unknown_fields_are_skipped() {
        let events = parse(&[b": keep-alive\n\nid: 7\nretry: 100\ndata: x\n\n:ping\n\n"]);
        assert_eq!(data(&events), ["x"]);
    }

    #[test]
    fn multi_line_data_is_joined_by_newline() {
        let events = parse(&[b"data: {\"a\":\ndata: 1}\ndata\n\n"]);
        assert_eq!(data(&events), ["{\"a\":\n1}\n"]);
    }

    #[test]
    fn crlf_cr_and_lf_all_end_lines_even_split_across_chunks() {
        let events = parse(&[b"data: a\r", b"\n\r", b"\ndata: b\r\rdata: c\n", b"\n"]);
        assert_eq!(data(&events), ["a", "b", "c"]);
    }

    #[test]
    fn events_split_at_any_byte_come_out_the_same() {
        let stream: &[u8] =
            b"\xef\xbb\xbf: hi\r\ndata: {\"t\":\"h\xc3\xa9\"}\r\n\r\nevent: x\ndata: 2\n\ndata: [DONE]\n\n";
        let whole = parse(&[stream]);
        assert_eq!(data(&whole), ["{\"t\":\"h\u{e9}\"}", "2", "[DONE]"]);
        assert_eq!(whole[1].event.as_deref(), Some("x"));
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                let split = parse(&[&stream[..i], &stream[i..j], &stream[j..]]);
                assert_eq!(split, whole, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn llama_cpp_error_lines_become_error_events() {
        let events = parse(&[b"error: {\"code\":500}\n\n"]);
        assert_eq!(events[0].event.as_deref(), Some("error"));
        assert_eq!(events[0].data, "{\"code\":500}");
    }

    #[test]
    fn end_of_stream_keeps_complete_lines_and_drops_a_cut_one() {
        assert_eq!(data(&parse(&[b"data: [DONE]\n"])), ["[DONE]"]);
        assert!(parse(&[b"data: {\"choices\":[{\"del"]).is_empty());
        assert!(parse(&[b"event: x\n\n"]).is_empty());
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(data(&parse(&[b"data: a\xffb\n\n"])), ["a\u{fffd}b"]);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut parser = SseParser::default();
        let block = vec![b'x'; 1 << 20];
        let mut out = Vec::new();
        let result = (0..20).try_for_each(|_| parser.push(&block, &mut out));
        assert_eq!(
            result,
            Err(EventTooLarge {
                limit: MAX_EVENT_BYTES
            })
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let alphabet = b"data: \r\n:x{}\xff";
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..2000 {
            let mut parser = SseParser::default();
            let mut out = Vec::new();
            let len = (seed % 64) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            for piece in bytes.chunks(3) {
                parser.push(piece, &mut out).unwrap();
            }
            parser.finish(&mut out);
        }
    }
}
