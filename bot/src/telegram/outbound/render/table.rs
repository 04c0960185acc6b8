//! A GFM table laid out as aligned monospace text.
//!
//! ```text
//! Name  | Qty
//! ------+----
//! apple |   3
//! ```
//!
//! Cells are plain text (inline formatting dropped, line breaks as spaces); columns are padded
//! to their widest cell by display width (wide East Asian characters and emoji count two
//! columns, combining marks none) and aligned as the delimiter row says; lines carry no
//! trailing spaces.

use pulldown_cmark::Alignment;

/// Rows collected from the table's events.
#[derive(Debug)]
pub(super) struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Row>,
    /// Bytes of text pushed so far.
    pushed: usize,
}

#[derive(Debug)]
struct Row {
    cells: Vec<String>,
    /// Start of the row's source line.
    source: usize,
}

impl Table {
    /// An empty table with the delimiter row's alignments.
    pub(super) fn new(alignments: Vec<Alignment>) -> Self {
        Table {
            alignments,
            rows: Vec::new(),
            pushed: 0,
        }
    }

    /// Starts a row (the header first) whose source line starts at `source`.
    pub(super) fn start_row(&mut self, source: usize) {
        self.rows.push(Row {
            cells: Vec::new(),
            source,
        });
    }

    /// Starts a cell in the current row.
    pub(super) fn start_cell(&mut self) {
        if let Some(row) = self.rows.last_mut() {
            row.cells.push(String::new());
        }
    }

    /// Appends text to the current cell.
    pub(super) fn push(&mut self, text: &str) {
        self.pushed += text.len();
        if let Some(cell) = self.rows.last_mut().and_then(|row| row.cells.last_mut()) {
            cell.extend(text.chars().map(|c| if c.is_whitespace() { ' ' } else { c }));
        }
    }

    /// Bytes of text pushed so far (tells whether an element in a cell had text).
    pub(super) fn pushed(&self) -> usize {
        self.pushed
    }

    /// The laid-out lines (unescaped), each with the start of its source line when it is a row
    /// (the header rule has none).
    pub(super) fn lines(&self) -> Vec<(String, Option<usize>)> {
        let columns = self
            .rows
            .iter()
            .map(|row| row.cells.len())
            .max()
            .unwrap_or(0)
            .max(self.alignments.len());
        let cells: Vec<Vec<&str>> = self
            .rows
            .iter()
            .map(|row| {
                (0..columns)
                    .map(|column| row.cells.get(column).map_or("", |cell| cell.trim()))
                    .collect()
            })
            .collect();
        let mut widths = vec![1; columns];
        for row in &cells {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(display_width(cell));
            }
        }
        let mut lines = Vec::with_capacity(cells.len() + 1);
        for (index, (row, source)) in cells.iter().zip(&self.rows).enumerate() {
            let padded: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(column, (cell, width))| {
                    let alignment = self.alignments.get(column).copied().unwrap_or(Alignment::None);
                    pad(cell, *width, alignment)
                })
                .collect();
            lines.push((padded.join(" | ").trim_end().to_owned(), Some(source.source)));
            if index == 0 {
                let rule: Vec<String> = widths.iter().map(|width| "-".repeat(*width)).collect();
                lines.push((rule.join("-+-"), None));
            }
        }
        lines
    }
}

fn pad(cell: &str, width: usize, alignment: Alignment) -> String {
    let room = width.saturating_sub(display_width(cell));
    let (left, right) = match alignment {
        Alignment::Right => (room, 0),
        Alignment::Center => (room / 2, room - room / 2),
        Alignment::None | Alignment::Left => (0, room),
    };
    format!("{}{cell}{}", " ".repeat(left), " ".repeat(right))
}

/// Columns `text` takes in a monospace font (an approximation of East Asian Width).
pub(super) fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    match u32::from(c) {
        0x0300..=0x036F | 0x200B..=0x200F | 0x20D0..=0x20FF | 0xFE00..=0xFE0F => 0,
        0x1F3FB..=0x1F3FF | 0xE0020..=0xE007F => 0,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F680..=0x1F6FF
        | 0x1F7E0..=0x1F7EB
        | 0x1F900..=0x1F9FF
        | 0x1FA70..=0x1FAFF
        | 0x20000..=0x3FFFD
        // Emoji shown wide by default (East Asian Width W) below U+1F000.
        | 0x231A..=0x231B
        | 0x23E9..=0x23EC
        | 0x23F0
        | 0x23F3
        | 0x25FD..=0x25FE
        | 0x2614..=0x2615
        | 0x2648..=0x2653
        | 0x267F
        | 0x2693
        | 0x26A1
        | 0x26AA..=0x26AB
        | 0x26BD..=0x26BE
        | 0x26C4..=0x26C5
        | 0x26CE
        | 0x26D4
        | 0x26EA
        | 0x26F2..=0x26F3
        | 0x26F5
        | 0x26FA
        | 0x26FD
        | 0x2705
        | 0x270A..=0x270B
        | 0x2728
        | 0x274C
        | 0x274E
        | 0x2753..=0x2755
        | 0x2757
        | 0x2795..=0x2797
        | 0x27B0
        | 0x27BF
        | 0x2B1B..=0x2B1C
        | 0x2B50
        | 0x2B55 => 2,
        _ => 1,
    }
}
