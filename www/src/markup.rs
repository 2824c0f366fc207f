//! HTML text for the console's large read-only parts (change lists, problems, the plan),
//! set as `inner_html` of one element. One small writer instead of a Leptos view type per
//! list item: the .wasm carries far less generic view code, and the browser's HTML parser
//! builds 10,000 rows in a few milliseconds where one DOM call per node takes hundreds.
//! Every text and attribute value goes through [`escape`], so no text can become markup.

/// An HTML fragment being written.
#[derive(Default)]
pub struct Markup(String);

/// Appends `text` to `out` with `& < > " '` escaped (safe in text and quoted attributes).
pub fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

impl Markup {
    /// `<tag name="value" ...>`; `tag` and the names are the caller's constants.
    pub fn open(&mut self, tag: &str, attributes: &[(&str, &str)]) -> &mut Markup {
        self.0.push('<');
        self.0.push_str(tag);
        for (name, value) in attributes {
            self.0.push(' ');
            self.0.push_str(name);
            self.0.push_str("=\"");
            escape(&mut self.0, value);
            self.0.push('"');
        }
        self.0.push('>');
        self
    }

    /// `</tag>`.
    pub fn close(&mut self, tag: &str) -> &mut Markup {
        self.0.push_str("</");
        self.0.push_str(tag);
        self.0.push('>');
        self
    }

    /// Escaped text.
    pub fn text(&mut self, text: &str) -> &mut Markup {
        escape(&mut self.0, text);
        self
    }

    /// `<tag ...>text</tag>`.
    pub fn element(&mut self, tag: &str, attributes: &[(&str, &str)], text: &str) -> &mut Markup {
        self.open(tag, attributes).text(text).close(tag)
    }

    /// The HTML written.
    pub fn finish(self) -> String {
        self.0
    }
}
