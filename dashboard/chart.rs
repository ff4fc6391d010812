//! The per-turn token chart of a session: for each turn a bar of its prompt tokens with
//! the cached part drawn over it, as inline SVG (no script, no external asset).

use super::data::TurnTokens;
use super::html::esc;
use super::text::Words;

const W: f64 = 640.0;
const H: f64 = 220.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 12.0;

/// The chart, or a note when there is nothing to draw.
pub fn svg(points: &[TurnTokens], w: &Words) -> String {
    if points.is_empty() {
        return format!("<p class=\"muted\">{}</p>", esc(w.no_tokens));
    }
    let max = points
        .iter()
        .map(|p| p.prompt.max(p.cached))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let plot_w = W - LEFT - 8.0;
    let plot_h = H - TOP - BOTTOM;
    let slot = plot_w / points.len() as f64;
    let bar = (slot * 0.7).clamp(1.0, 40.0);
    let y = |v: u64| TOP + plot_h - (v as f64 / max) * plot_h;
    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(w.tokens)
    );
    // axis and the top value
    out.push_str(&format!(
        "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{b}\" stroke=\"#888\"/><line x1=\"{LEFT}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#888\"/>",
        b = TOP + plot_h,
        r = W - 8.0
    ));
    out.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">0</text>",
        LEFT - 4.0,
        TOP + 10.0,
        max as u64,
        LEFT - 4.0,
        TOP + plot_h
    ));
    let label_every = (points.len() / 12).max(1);
    for (i, p) in points.iter().enumerate() {
        let x = LEFT + i as f64 * slot + (slot - bar) / 2.0;
        out.push_str(&format!(
            "<g><title>{} {}: {} {} · {} {}</title><rect class=\"prompt\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{:.1}\" fill=\"#9db4d3\"/><rect class=\"cached\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{:.1}\" fill=\"#2f855a\"/></g>",
            esc(w.turn),
            p.turn,
            esc(w.prompt_tokens),
            p.prompt,
            esc(w.cached_tokens),
            p.cached,
            y(p.prompt),
            TOP + plot_h - y(p.prompt),
            y(p.cached),
            TOP + plot_h - y(p.cached),
        ));
        if i % label_every == 0 {
            out.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
                x + bar / 2.0,
                H - 8.0,
                p.turn
            ));
        }
    }
    out.push_str("</svg>");
    out.push_str(&format!(
        "<p class=\"legend\"><span class=\"key-prompt\">■</span> {} <span class=\"key-cached\">■</span> {}</p>",
        esc(w.prompt_tokens),
        esc(w.cached_tokens)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Language;

    #[test]
    fn one_bar_pair_per_turn_scaled_to_the_largest() {
        let w = super::super::text::words(Language::En);
        let pts = [
            TurnTokens {
                turn: 1,
                prompt: 1000,
                cached: 0,
                completion: 10,
                calls: 1,
            },
            TurnTokens {
                turn: 2,
                prompt: 2000,
                cached: 1500,
                completion: 10,
                calls: 2,
            },
        ];
        let s = svg(&pts, w);
        assert_eq!(s.matches("class=\"prompt\"").count(), 2);
        assert_eq!(s.matches("class=\"cached\"").count(), 2);
        assert!(s.contains(">2000<"), "{s}");
        assert!(s.contains("turn 2: prompt 2000 · cached 1500"), "{s}");
        assert!(svg(&[], w).contains("No calls recorded"));
    }
}
