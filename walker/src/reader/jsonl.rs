//! An incremental reader of the JSON Lines a model streams while it reads passages: fact
//! objects, next-source descriptors and a `sufficient` flag, each returned the moment its
//! object closes.
//!
//! Small models stray from the format, so the reader takes what they do: code fences and
//! prose around or between objects (skipped), a JSON array instead of lines, a trailing
//! comma, a last object cut off by the token limit (closed and read), snake_case or other
//! spellings of the keys, and a Markdown table with fact/relevance/source columns.
//!
//! [`ObjectReader`] reads the same way but returns every object whole, whatever its keys, for
//! protocols of their own (the `actions` strategy's `{"action": ...}` lines).

use serde_json::{Map, Value};

/// What a line of the stream said.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Fact {
        fact: String,
        relevance: String,
        /// The source as written (a chunk id, if the model followed the format).
        source: String,
    },
    NextSource {
        next_source: String,
        expected_info: String,
    },
    Sufficient(bool),
    /// Text that could not be read as any of the above (kept for the trace).
    Skipped(String),
}

/// What an [`ObjectReader`] returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Raw {
    /// A JSON object (repaired where a small model broke it), or a Markdown table row read as
    /// one (column name → cell).
    Object(Map<String, Value>),
    /// Text that is not an object (kept for the trace).
    Skipped(String),
}

/// What the scan produces: items, or in object mode whole objects.
enum Out {
    Item(Item),
    Object(Map<String, Value>),
}

impl Out {
    fn is_skipped(&self) -> bool {
        matches!(self, Out::Item(Item::Skipped(_)))
    }

    fn into_item(self) -> Item {
        match self {
            Out::Item(item) => item,
            // Only object mode makes objects; an item reader never sees one.
            Out::Object(object) => Item::Skipped(Value::Object(object).to_string()),
        }
    }

    fn into_raw(self) -> Raw {
        match self {
            Out::Object(object) => Raw::Object(object),
            Out::Item(Item::Skipped(text)) => Raw::Skipped(text),
            // Object mode reads no items; an object reader never sees one.
            Out::Item(other) => Raw::Skipped(format!("{other:?}")),
        }
    }
}

/// Reads JSON Lines like [`Reader`], returning each object whole instead of reading facts
/// out of it. Feed it with [`push`](Self::push), end with [`finish`](Self::finish).
#[derive(Debug)]
pub struct ObjectReader {
    inner: Reader,
}

impl Default for ObjectReader {
    fn default() -> Self {
        Self::new()
    }
}

impl ObjectReader {
    pub fn new() -> Self {
        Self {
            inner: Reader {
                objects: true,
                ..Reader::default()
            },
        }
    }

    /// Reads `text`, returning the objects (and skipped lines) completed by it.
    pub fn push(&mut self, text: &str) -> Vec<Raw> {
        self.inner
            .scan(text)
            .into_iter()
            .map(Out::into_raw)
            .collect()
    }

    /// Ends the stream: a last object cut short is closed and read.
    pub fn finish(&mut self) -> Vec<Raw> {
        self.inner.end().into_iter().map(Out::into_raw).collect()
    }
}

/// Feed it text as it streams in with [`push`](Self::push); call [`finish`](Self::finish)
/// at the end of the stream.
#[derive(Debug, Default)]
pub struct Reader {
    /// Text not yet consumed: an open object, or the current line outside objects.
    buf: String,
    /// Scan position in `buf`.
    pos: usize,
    /// Byte offset of the open object's `{` in `buf`.
    start: Option<usize>,
    depth: usize,
    /// Where the scan of the open object is: in a string or not.
    quoting: Quoting,
    /// Column names of a Markdown table being read.
    table: Option<Vec<String>>,
    /// Object mode ([`ObjectReader`]): objects are returned whole.
    objects: bool,
}

impl Reader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `text`, returning the items completed by it.
    pub fn push(&mut self, text: &str) -> Vec<Item> {
        self.scan(text).into_iter().map(Out::into_item).collect()
    }

    /// Ends the stream: a last object cut short is closed and read, a last line outside
    /// objects is read.
    pub fn finish(&mut self) -> Vec<Item> {
        self.end().into_iter().map(Out::into_item).collect()
    }

    fn scan(&mut self, text: &str) -> Vec<Out> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.push_str(text);
        let mut items = Vec::new();
        let bytes = buf.as_bytes();
        // Start of the line outside objects being read.
        let mut line_start = 0;
        for i in self.pos..bytes.len() {
            let b = bytes[i];
            let Some(start) = self.start else {
                if b == b'{' {
                    self.outside(&buf[line_start..i], false, &mut items);
                    self.start = Some(i);
                    self.depth = 1;
                    self.quoting = Quoting::default();
                } else if b == b'\n' {
                    self.outside(&buf[line_start..i], true, &mut items);
                    line_start = i + 1;
                }
                continue;
            };
            // Bytes of multi-byte characters are neither quotes nor backslashes.
            if self.quoting.takes(char::from(b)) {
                continue;
            }
            if b == b'{' {
                self.depth += 1;
            } else if b == b'}' {
                self.depth -= 1;
                if self.depth == 0 {
                    items.extend(read_object(&buf[start..=i], self.objects));
                    self.start = None;
                    line_start = i + 1;
                }
            }
        }
        let keep_from = self.start.unwrap_or(line_start);
        buf.drain(..keep_from);
        if let Some(start) = self.start.as_mut() {
            *start -= keep_from;
        }
        self.pos = buf.len();
        self.buf = buf;
        items
    }

    fn end(&mut self) -> Vec<Out> {
        let mut items = Vec::new();
        let rest = std::mem::take(&mut self.buf);
        match self.start.take() {
            Some(start) => {
                let mut text = rest[start..].to_string();
                if self.quoting.in_string {
                    if self.quoting.escape {
                        text.pop();
                    }
                    text.push('"');
                }
                // A dangling key or comma cannot be closed into JSON; drop back to the last
                // complete value.
                let mut closed = text.clone();
                closed.push_str(&closers(&text));
                let parsed = read_object(&closed, self.objects);
                if parsed.iter().all(Out::is_skipped) {
                    if let Some(cut) = text.rfind([',', '{', '[']) {
                        let mut shorter = text[..cut].to_string();
                        let at_cut = char::from(text.as_bytes()[cut]);
                        if matches!(at_cut, '{' | '[') {
                            shorter.push(at_cut);
                        }
                        shorter.push_str(&closers(&shorter));
                        let retry = read_object(&shorter, self.objects);
                        if retry.iter().any(|i| !i.is_skipped()) {
                            items.extend(retry);
                            return items;
                        }
                    }
                }
                items.extend(parsed);
            }
            None => {
                let line = rest.trim_end_matches('\n');
                self.outside(line, true, &mut items);
            }
        }
        self.pos = 0;
        items
    }

    /// Text outside objects: table rows are read, fences and blank lines ignored, anything
    /// else skipped. `whole` says the line is complete.
    fn outside(&mut self, line: &str, whole: bool, items: &mut Vec<Out>) {
        let line = line.trim();
        if line.is_empty() || line.starts_with("```") || matches!(line, "[" | "]" | "," | "],") {
            return;
        }
        if line.starts_with('|') {
            if whole {
                self.table_row(line, items);
            }
            return;
        }
        self.table = None;
        if line
            .trim_matches(|c: char| c == ',' || c == '[' || c == ']')
            .is_empty()
        {
            return;
        }
        items.push(Out::Item(Item::Skipped(line.to_string())));
    }

    fn table_row(&mut self, line: &str, items: &mut Vec<Out>) {
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().trim_matches('`').trim().to_string())
            .collect();
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
        {
            return;
        }
        match &self.table {
            None => self.table = Some(cells.iter().map(|c| squash(c)).collect()),
            Some(columns) if columns.len() != cells.len() => {
                items.push(Out::Item(Item::Skipped(line.to_string())));
            }
            Some(columns) => {
                let mut object = Map::new();
                for (column, cell) in columns.iter().zip(cells) {
                    object.insert(column.clone(), Value::String(cell));
                }
                if self.objects {
                    items.push(Out::Object(object));
                    return;
                }
                let found = items_of(&object);
                if found.is_empty() {
                    items.push(Out::Item(Item::Skipped(line.to_string())));
                }
                items.extend(found.into_iter().map(Out::Item));
            }
        }
    }
}

/// What closes the objects and lists `text` leaves open (outside its strings), innermost
/// first: `]}` for `{"ids": [1, 2`. A model cut short by its token limit, often while
/// repeating a list's items, leaves both open.
fn closers(text: &str) -> String {
    let mut open = Vec::new();
    let mut quoting = Quoting::default();
    for c in text.chars() {
        if quoting.takes(c) {
            continue;
        }
        match c {
            '{' => open.push('}'),
            '[' => open.push(']'),
            '}' | ']' => {
                open.pop();
            }
            _ => {}
        }
    }
    open.iter().rev().collect()
}

/// Whether a scan of JSON text is inside a string (and just after a backslash there).
#[derive(Debug, Default)]
struct Quoting {
    in_string: bool,
    escape: bool,
}

impl Quoting {
    /// Takes the next character: true where it is part of a string, its quotes included.
    fn takes(&mut self, c: char) -> bool {
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if c == '\\' {
                self.escape = true;
            } else if c == '"' {
                self.in_string = false;
            }
            true
        } else {
            self.in_string = c == '"';
            self.in_string
        }
    }
}

/// The items of one `{...}` text (in object mode, the object itself), repaired where a small
/// model broke it.
fn read_object(text: &str, objects: bool) -> Vec<Out> {
    let parsed = serde_json::from_str::<Value>(text)
        .ok()
        .or_else(|| serde_json::from_str::<Value>(&repair(text)).ok());
    let skipped = || vec![Out::Item(Item::Skipped(text.to_string()))];
    match parsed {
        Some(Value::Object(object)) if objects => vec![Out::Object(object)],
        Some(Value::Object(object)) => {
            let items = items_of(&object);
            if items.is_empty() {
                skipped()
            } else {
                items.into_iter().map(Out::Item).collect()
            }
        }
        _ => skipped(),
    }
}

/// Removes trailing commas before `}` and `]` (outside strings), and turns curly quotes used
/// as JSON quotes into straight ones.
fn repair(text: &str) -> String {
    let text = text.replace(['“', '”'], "\"");
    let mut out = String::with_capacity(text.len());
    let mut quoting = Quoting::default();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if quoting.takes(c) {
            out.push(c);
            continue;
        }
        if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// A name without case, `_`, `-` or spaces: `nextSource`, `next_source`, `Next source`
/// agree (keys, action and tool names as small models spell them).
pub fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.trim().to_string(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn items_of(object: &Map<String, Value>) -> Vec<Item> {
    let get = |names: &[&str]| {
        object
            .iter()
            .find(|(k, _)| names.contains(&squash(k).as_str()))
            .map(|(_, v)| v)
    };
    let mut items = Vec::new();
    if let Some(fact) = get(&["fact", "facts", "statement"]).map(text_of) {
        if !fact.is_empty() {
            items.push(Item::Fact {
                fact,
                relevance: get(&["relevance", "why", "reason"])
                    .map(text_of)
                    .unwrap_or_default(),
                source: get(&["source", "sourceid", "chunk", "chunkid", "passage", "id"])
                    .map(text_of)
                    .unwrap_or_default(),
            });
        }
    }
    if let Some(next) = get(&["nextsource", "next", "search", "query"]).map(text_of) {
        if !next.is_empty() {
            items.push(Item::NextSource {
                next_source: next,
                expected_info: get(&["expectedinfo", "expected", "expectedinformation"])
                    .map(text_of)
                    .unwrap_or_default(),
            });
        }
    }
    if let Some(value) = get(&["sufficient", "enough", "done"]) {
        let flag = match value {
            Value::Bool(b) => Some(*b),
            Value::String(s) => match s.trim().to_lowercase().as_str() {
                "true" | "yes" => Some(true),
                "false" | "no" => Some(false),
                _ => None,
            },
            _ => None,
        };
        if let Some(flag) = flag {
            items.push(Item::Sufficient(flag));
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(text: &str, source: &str) -> Item {
        Item::Fact {
            fact: text.into(),
            relevance: "r".into(),
            source: source.into(),
        }
    }

    /// Reads `text` split into pieces of `size` bytes (at char boundaries).
    fn read_in_pieces(text: &str, size: usize) -> Vec<Item> {
        let mut reader = Reader::new();
        let mut items = Vec::new();
        let mut piece = String::new();
        for c in text.chars() {
            piece.push(c);
            if piece.len() >= size {
                items.extend(reader.push(&piece));
                piece.clear();
            }
        }
        items.extend(reader.push(&piece));
        items.extend(reader.finish());
        items
    }

    const CLEAN: &str = "{\"fact\": \"Ilsa Brandt is the mayor of Velmora.\", \"relevance\": \"r\", \"source\": \"0badcafe.0\"}\n\
        {\"nextSource\": \"Ilsa Brandt biography\", \"expectedInfo\": \"her birthplace\"}\n\
        {\"sufficient\": false}\n";

    #[test]
    fn reads_objects_as_they_close_whatever_the_pieces() {
        let expected = vec![
            fact("Ilsa Brandt is the mayor of Velmora.", "0badcafe.0"),
            Item::NextSource {
                next_source: "Ilsa Brandt biography".into(),
                expected_info: "her birthplace".into(),
            },
            Item::Sufficient(false),
        ];
        for size in [1, 2, 3, 7, 1000] {
            assert_eq!(read_in_pieces(CLEAN, size), expected, "pieces of {size}");
        }
        // An object is returned by the push that closes it, before the stream ends.
        let mut reader = Reader::new();
        assert!(reader
            .push("{\"fact\": \"a\", \"source\": \"x\"")
            .is_empty());
        assert_eq!(reader.push("}\n{\"fact\"").len(), 1);
    }

    #[test]
    fn tolerates_fences_prose_arrays_commas_and_key_spellings() {
        let text = "Here are the facts:\n```json\n[\n  {\"fact\": \"A\", \"relevance\": \"r\", \"source\": \"s1\",},\n  {\"next_source\": \"B\", \"expected_info\": \"C\"}\n]\n```\nHope this helps!";
        let items = read_in_pieces(text, 5);
        assert_eq!(
            items,
            vec![
                Item::Skipped("Here are the facts:".into()),
                fact("A", "s1"),
                Item::NextSource {
                    next_source: "B".into(),
                    expected_info: "C".into()
                },
                Item::Skipped("Hope this helps!".into()),
            ]
        );
        let text = "{\"Fact\": \"braces } and \\\"quotes\\\" in a string\", \"Relevance\": \"r\", \"Source\": 3}";
        assert_eq!(
            read_in_pieces(text, 4),
            vec![fact("braces } and \"quotes\" in a string", "3")]
        );
        assert_eq!(
            read_in_pieces("{\"sufficient\": \"yes\"}", 3),
            vec![Item::Sufficient(true)]
        );
    }

    /// What the object reader makes of `text` given whole.
    fn objects_of(text: &str) -> Vec<Raw> {
        let mut reader = ObjectReader::new();
        let mut raws = reader.push(text);
        raws.extend(reader.finish());
        raws
    }

    fn object(value: serde_json::Value) -> Raw {
        Raw::Object(value.as_object().unwrap().clone())
    }

    #[test]
    fn closes_an_object_cut_short_inside_a_list() {
        // A model repeating a list's items until its token limit (held-out 28's l28): the
        // object is closed at its last complete item.
        let cut = "{\"action\": \"execute_action\", \"params\": {\"id\": \"48877\", \"post_ids\": [\"12345\", \"67890\", \"123";
        assert_eq!(
            objects_of(cut),
            [object(
                serde_json::json!({"action": "execute_action", "params": {"id": "48877", "post_ids": ["12345", "67890", "123"]}})
            )]
        );
        // Cut after a comma in the list: the items before it are kept.
        assert_eq!(
            objects_of("{\"ids\": [1, 2, "),
            [object(serde_json::json!({"ids": [1, 2]}))]
        );
        assert_eq!(closers("{\"a\": [{\"b\": \"]}\", \"c\": ["), "]}]}");
    }

    #[test]
    fn closes_a_last_object_cut_short() {
        assert_eq!(
            read_in_pieces("{\"fact\": \"A\", \"relevance\": \"r\", \"source\": \"s1\"}\n{\"fact\": \"B was cut", 6),
            vec![
                fact("A", "s1"),
                Item::Fact {
                    fact: "B was cut".into(),
                    relevance: String::new(),
                    source: String::new()
                }
            ]
        );
        // Cut after a key: the complete part is kept.
        assert_eq!(
            read_in_pieces("{\"nextSource\": \"X\", \"expectedInfo", 4),
            vec![Item::NextSource {
                next_source: "X".into(),
                expected_info: String::new()
            }]
        );
        assert_eq!(
            read_in_pieces("{\"fact\": ", 4),
            vec![Item::Skipped("{\"fact\": }".into())]
        );
    }

    #[test]
    fn salvages_a_markdown_table() {
        let text = "| Fact | Relevance | Source |\n|---|---|---|\n| Kessel has a cheese market. | r | `0badcafe.1` |\n| not a row\n";
        assert_eq!(
            read_in_pieces(text, 3),
            vec![
                fact("Kessel has a cheese market.", "0badcafe.1"),
                Item::Skipped("| not a row".into())
            ]
        );
    }

    #[test]
    fn objects_without_known_keys_are_skipped_not_lost() {
        assert_eq!(
            read_in_pieces("{\"answer\": \"42\"}\n{broken json}", 3),
            vec![
                Item::Skipped("{\"answer\": \"42\"}".into()),
                Item::Skipped("{broken json}".into())
            ]
        );
    }
    #[test]
    fn object_reader_returns_objects_whole_and_items_are_read_as_before() {
        let text = "```json\n{\"action\": \"execute_action\", \"params\": {\"id\": 7,}}\n```\nDone.\n{\"fact\": \"A\", \"source\": \"s\"}\n{\"action\": \"respond\", \"text\": \"cut sh";
        for size in [1, 4, 1000] {
            let mut reader = ObjectReader::new();
            let mut got = Vec::new();
            let mut piece = String::new();
            for c in text.chars() {
                piece.push(c);
                if piece.len() >= size {
                    got.extend(reader.push(&piece));
                    piece.clear();
                }
            }
            got.extend(reader.push(&piece));
            got.extend(reader.finish());
            assert_eq!(
                got,
                vec![
                    object(serde_json::json!({"action": "execute_action", "params": {"id": 7}})),
                    Raw::Skipped("Done.".into()),
                    object(serde_json::json!({"fact": "A", "source": "s"})),
                    object(serde_json::json!({"action": "respond", "text": "cut sh"})),
                ],
                "pieces of {size}"
            );
        }
        // The item reader still skips objects without its keys.
        assert_eq!(
            read_in_pieces("{\"action\": \"respond\"}", 3),
            vec![Item::Skipped("{\"action\": \"respond\"}".into())]
        );
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    /// `text` cut at `cuts` (taken modulo its length, on character boundaries), in order.
    fn pieces<'t>(text: &'t str, cuts: &[usize]) -> Vec<&'t str> {
        let mut points: Vec<usize> = cuts
            .iter()
            .map(|c| c % (text.len() + 1))
            .filter(|&c| text.is_char_boundary(c))
            .collect();
        points.sort_unstable();
        let mut out = Vec::new();
        let mut last = 0;
        for cut in points {
            out.push(&text[last..cut]);
            last = cut;
        }
        out.push(&text[last..]);
        out
    }

    fn read_split(text: &str, cuts: &[usize]) -> Vec<Item> {
        let mut reader = Reader::new();
        let mut items: Vec<Item> = pieces(text, cuts)
            .into_iter()
            .flat_map(|piece| reader.push(piece))
            .collect();
        items.extend(reader.finish());
        items
    }

    proptest! {
        /// Never panics, and how the stream is cut into pieces never changes what is read.
        #[test]
        fn any_text_any_pieces(
            text in r#"([{}\[\]",:\\|\n a-zé]|"fact"|"source"|"nextSource"|true|```)*"#,
            cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let whole = read_split(&text, &[]);
            prop_assert_eq!(read_split(&text, &cuts), whole);
        }

        /// The same for whole objects.
        #[test]
        fn any_text_any_pieces_as_objects(
            text in r#"([{}\[\]",:\\|\n a-zé]|"action"|"params"|true|```)*"#,
            cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let whole = read_objects_split(&text, &[]);
            prop_assert_eq!(read_objects_split(&text, &cuts), whole);
        }
    }

    fn read_objects_split(text: &str, cuts: &[usize]) -> Vec<Raw> {
        let mut reader = ObjectReader::new();
        let mut items: Vec<Raw> = pieces(text, cuts)
            .into_iter()
            .flat_map(|piece| reader.push(piece))
            .collect();
        items.extend(reader.finish());
        items
    }
}
