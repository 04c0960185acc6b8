//! The `/usage` chart: one bar per day (oldest left, today right), drawn by `plotters` into an
//! RGB buffer and encoded as PNG. It carries no text (no font is needed on a fresh machine):
//! the photo's caption gives the numbers, and faint lines mark each dollar (each cent when the
//! tallest day is under a dollar) so the bars can be read against them.

use plotters::prelude::*;
use volcanic_allowance::MicroUsd;

/// Width and height of the image (pixels).
pub const SIZE: (u32, u32) = (600, 300);
/// Margin around the bars (pixels).
const MARGIN: i32 = 12;
const BACKGROUND: RGBColor = RGBColor(255, 255, 255);
const BAR: RGBColor = RGBColor(46, 125, 200);
const TODAY: RGBColor = RGBColor(230, 120, 30);
const GUIDE: RGBColor = RGBColor(225, 225, 225);
const AXIS: RGBColor = RGBColor(120, 120, 120);

/// Why the chart could not be made (a drawing or encoding failure; not expected with these
/// sizes, reported rather than unwrapped).
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the usage chart: {0}")]
pub struct ChartError(String);

/// A PNG of `days` (each day's spend, oldest first; the last is today), [`SIZE`] pixels.
pub fn render(days: &[MicroUsd]) -> Result<Vec<u8>, ChartError> {
    let (w, h) = SIZE;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    draw(days, &mut rgb).map_err(|e| ChartError(e.to_string()))?;
    encode(&rgb, w, h).map_err(|e| ChartError(e.to_string()))
}

fn draw(days: &[MicroUsd], rgb: &mut [u8]) -> Result<(), Box<dyn std::error::Error>> {
    let (w, h) = SIZE;
    let area = BitMapBackend::with_buffer(rgb, (w, h)).into_drawing_area();
    area.fill(&BACKGROUND)?;
    let (left, right, top, bottom) = (MARGIN, w as i32 - MARGIN, MARGIN, h as i32 - MARGIN);
    let tallest = days.iter().map(|d| d.0).max().unwrap_or(0);
    let step = guide_step(tallest);
    // The scale's top: the tallest day rounded up to a guide line (at least one).
    let top_value = tallest.div_ceil(step).max(1) * step;
    let y_of = |v: u64| bottom - ((v as f64 / top_value as f64) * f64::from(bottom - top)).round() as i32;
    let mut line = step;
    while line <= top_value {
        area.draw(&PathElement::new(vec![(left, y_of(line)), (right, y_of(line))], GUIDE))?;
        line += step;
    }
    let n = days.len().max(1) as i32;
    let slot = (right - left) / n;
    let gap = (slot / 5).max(1);
    for (i, day) in days.iter().enumerate() {
        let x = left + slot * i as i32;
        let color = if i + 1 == days.len() { TODAY } else { BAR };
        // A day with any spend shows at least a sliver.
        let y = if day.0 > 0 { y_of(day.0).min(bottom - 2) } else { bottom };
        area.draw(&Rectangle::new(
            [(x + gap, y), (x + slot - gap, bottom)],
            color.filled(),
        ))?;
    }
    area.draw(&PathElement::new(vec![(left, bottom), (right, bottom)], AXIS))?;
    area.present()?;
    Ok(())
}

/// The spacing of the guide lines: a dollar, or a cent below a dollar's tallest day.
fn guide_step(tallest: u64) -> u64 {
    let dollar = MicroUsd::from_usd(1.0).0;
    if tallest >= dollar { dollar } else { dollar / 100 }
}

fn encode(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    type Pixel = (u8, u8, u8);

    /// Decodes a PNG: its size and its RGB(A) pixels as `(r, g, b)`.
    fn decode(png_bytes: &[u8]) -> ((u32, u32), Vec<Pixel>) {
        let decoder = png::Decoder::new(png_bytes);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let step = info.color_type.samples();
        let pixels = buf[..info.buffer_size()]
            .chunks(step)
            .map(|p| (p[0], p[1], p[2]))
            .collect();
        ((info.width, info.height), pixels)
    }

    fn count(pixels: &[Pixel], c: RGBColor) -> usize {
        pixels.iter().filter(|p| **p == (c.0, c.1, c.2)).count()
    }

    #[test]
    fn bars_are_as_tall_as_their_days() {
        let mut days = vec![MicroUsd(0); 30];
        days[10] = MicroUsd::from_usd(2.0);
        days[20] = MicroUsd::from_usd(1.0);
        days[29] = MicroUsd::from_usd(0.5);
        let png = render(&days).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let (size, pixels) = decode(&png);
        assert_eq!(size, SIZE);
        // Column heights of the bar colour in the middle of slots 10 and 20: two to one.
        let height = |slot: i32, c: RGBColor| {
            let slot_w = (SIZE.0 as i32 - 2 * MARGIN) / 30;
            let x = (MARGIN + slot_w * slot + slot_w / 2) as usize;
            (0..SIZE.1 as usize)
                .filter(|y| pixels[y * SIZE.0 as usize + x] == (c.0, c.1, c.2))
                .count()
        };
        let (two, one) = (height(10, BAR), height(20, BAR));
        assert!(one > 50 && (two as f64 / one as f64 - 2.0).abs() < 0.05, "{two} {one}");
        assert!(height(29, TODAY) > 0 && height(29, TODAY) < one);
        assert_eq!(height(5, BAR), 0);
    }

    #[test]
    fn an_empty_month_is_a_blank_axis() {
        let (_, pixels) = decode(&render(&[MicroUsd(0); 30]).unwrap());
        assert_eq!(count(&pixels, BAR), 0);
        assert!(count(&pixels, AXIS) > 0);
    }
}
