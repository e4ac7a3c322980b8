// tlnetron: colour Netron's drawn nodes by a metric (a heat map), from the companion and the
// artifact this page already hands Netron. Netron's files stay unmodified: this script only
// restyles the node boxes Netron drew, and redoes it whenever Netron redraws (drill-down,
// going back up, a re-layout), watched with a MutationObserver.
//
// window.tlnetronHeatmap.attach(getDocument, mount, model, companion, schemes, initial)
//   getDocument(): the document Netron draws in (the iframe's, or this page's own);
//   mount: the element the control goes in (over Netron's canvas);
//   model, companion: the parsed artifact and companion (companion may be null);
//   schemes: the colour schemes, in the vocabulary's order, each {name, label} and where a node's value
//     comes from (vocab.COLOUR_SCHEMES, generated from the schema: rows, attribute, node_meta or
//     value_rows; unit or categories [value, label, colour]); initial: the first choice.
// With ?picture=1 in the page's address (tlnetron render), the legend is also drawn into Netron's
// graph, above its top-left corner, so File > Export carries it into the .svg / .png.
(() => {
    'use strict';
    const NEUTRAL = '#d9d9d9';
    // A value that is known to be 0 (a reshape's FLOPs): below the scale, apart from "no value".
    const ZERO = '#ffffff';
    // viridis, 9 stops (perceptually uniform); a value is interpolated between them.
    const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725'];

    const hex = (c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
    const viridis = (t) => {
        const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
        const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
        const a = hex(VIRIDIS[i]);
        const b = hex(VIRIDIS[i + 1]);
        const f = x - i;
        return '#' + a.map((v, k) => Math.round(v + (b[k] - v) * f).toString(16).padStart(2, '0')).join('');
    };
    // Dark text on the light end of the scale, white on the dark end (contrast both ways).
    const ink = (c) => {
        const [r, g, b] = hex(c);
        return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? '#000' : '#fff';
    };

    const tables = (model, companion) => {
        const rows = new Map();
        for (const row of (companion && companion.metrics) || []) {
            if (row.kind === 'node' || row.kind === 'value') {
                const key = `${row.kind}:${row.target}`;
                if (!rows.has(key)) {
                    rows.set(key, new Map());
                }
                rows.get(key).set(row.name, row.value);
            }
        }
        const nodes = new Map();
        const graphs = [model.graph || {}, ...(model.functions || [])];
        for (const graph of graphs) {
            for (const node of graph.node || []) {
                if (node.name) {
                    nodes.set(node.name, node);
                }
            }
        }
        return { rows, nodes };
    };

    // A node's value under ``scheme`` (one entry of the table), or undefined: absent, never zero.
    const valueOf = (scheme, name, data) => {
        const own = data.rows.get(`node:${name}`);
        const node = data.nodes.get(name);
        if (scheme.rows) {
            for (const row of scheme.rows) {
                if (own && typeof own.get(row) === 'number') {
                    return own.get(row);
                }
            }
            return undefined;
        }
        if (scheme.attribute) {
            const attr = node && (node.attribute || []).find((a) => a.name === scheme.attribute);
            const count = attr ? Number(attr.i) : NaN;
            return Number.isFinite(count) && count > 0 ? count : undefined;  // none: absent, never zero
        }
        if (scheme.node_meta) {
            const prop = node && (node.metadataProps || []).find((p) => p.key === scheme.node_meta);
            const known = prop && scheme.categories.find(([value]) => value === prop.value);
            return known ? known[1] : undefined;
        }
        if (scheme.value_rows) {
            let seen = false;
            let bad = 0;
            for (const output of (node && node.output) || []) {
                const stats = data.rows.get(`value:${output}`);
                for (const row of scheme.value_rows) {
                    if (stats && stats.has(row)) {
                        seen = true;
                        bad += Number(stats.get(row) || 0);
                    }
                }
            }
            return seen ? scheme.categories[bad > 0 ? 1 : 0][1] : undefined;
        }
        return undefined;
    };

    const format = (v) => (Math.abs(v) >= 1e4 ? v.toExponential(2) : String(Math.round(v * 1000) / 1000));

    // The legend as SVG in Netron's #origin (what its export clones and translates), so a picture
    // says what its colours mean. No grapher.css rule names these elements: their fills survive export.
    const PICTURE_LEGEND = 'tlnetron-picture-legend';
    const pictureLegend = (doc, title, range, swatches) => {
        const origin = doc.getElementById('origin');
        if (!origin) {
            return;
        }
        const ns = 'http://www.w3.org/2000/svg';
        const graph = origin.getBBox();
        const g = doc.createElementNS(ns, 'g');
        g.setAttribute('id', PICTURE_LEGEND);
        const add = (tag, attrs) => {
            const e = doc.createElementNS(ns, tag);
            for (const [k, v] of Object.entries(attrs)) {
                e.setAttribute(k, String(v));
            }
            g.appendChild(e);
            return e;
        };
        const text = (x, y, words) => {
            add('text', { x, y, 'font-family': 'sans-serif', 'font-size': 11, fill: '#222' }).textContent = words;
        };
        let y = 11;
        text(0, y, title);
        if (range !== null) {
            const w = 160 / VIRIDIS.length;
            VIRIDIS.forEach((c, i) => add('rect', { x: i * w, y: y + 5, width: w + 0.5, height: 10, fill: c }));
            y += 29;
            text(0, y, range);
        }
        for (const [c, words] of swatches) {
            y += 16;
            add('rect', { x: 0, y: y - 9, width: 10, height: 10, fill: c, stroke: '#999', 'stroke-width': 1 });
            text(16, y, words);
        }
        g.setAttribute('transform', `translate(${graph.x}, ${graph.y - y - 20})`);
        origin.appendChild(g);
    };
    const picture = new URLSearchParams(window.location.search).get('picture') === '1';

    const attach = (getDocument, mount, model, companion, schemes, initial) => {
        const data = tables(model, companion);
        const table = new Map(schemes.map((s) => [s.name, s]));
        const names = schemes.map((s) => s.name);
        let scheme = table.has(initial) ? initial : 'none';
        const own = mount.ownerDocument;
        const box = own.createElement('div');
        box.id = 'tlnetron-heatmap';
        // Above Netron's toolbar (bottom-left) and under its menu and sidebar (z-index 2), which cover it when open.
        box.setAttribute('style', 'position:fixed;left:10px;bottom:48px;z-index:1;font:11px sans-serif;background:rgba(255,255,255,.92);' +
            'border:1px solid #bbb;border-radius:4px;padding:4px 6px;color:#222;max-width:260px');
        const label = own.createElement('label');
        label.textContent = 'colour by ';
        const select = own.createElement('select');
        select.id = 'tlnetron-colour';
        for (const name of names) {
            const option = own.createElement('option');
            option.value = name;
            option.textContent = table.get(name).label;
            select.appendChild(option);
        }
        select.value = scheme;
        label.appendChild(select);
        const legend = own.createElement('div');
        legend.id = 'tlnetron-legend';
        box.appendChild(label);
        // An unknown ?colour= is named with the schemes there are, as --colour-by refuses it; the page stays uncoloured.
        let notice = null;
        if (initial && !table.has(initial)) {
            notice = own.createElement('div');
            notice.id = 'tlnetron-colour-notice';
            notice.setAttribute('style', 'color:#a40000;margin-top:3px;overflow-wrap:anywhere');
            notice.textContent = `colour=${JSON.stringify(String(initial).slice(0, 40))} is no colour scheme: ` +
                `pick one here, or use ?colour= with one of ${names.join(', ')}.`;
            box.appendChild(notice);
        }
        box.appendChild(legend);
        mount.appendChild(box);

        const swatch = (c, text) => {
            const row = own.createElement('div');
            const mark = own.createElement('span');
            mark.setAttribute('style', `display:inline-block;width:10px;height:10px;background:${c};border:1px solid #999;margin-right:4px`);
            row.appendChild(mark);
            row.appendChild(own.createTextNode(text));
            return row;
        };
        const painted = (doc) => doc.querySelectorAll('#nodes > g.node[data-tlnetron-colour]');
        const clear = (doc) => {
            const drawn = doc.getElementById(PICTURE_LEGEND);
            if (drawn) {
                drawn.remove();
            }
            for (const g of painted(doc)) {
                const item = g.querySelector(':scope > g.node-item-type');
                if (item) {
                    item.querySelector(':scope > path').style.removeProperty('fill');
                    const text = item.querySelector(':scope > text');
                    text.style.removeProperty('fill');
                    const span = text.querySelector(':scope > tspan.tlnetron-heat');
                    if (span) {
                        text.textContent = span.textContent;
                    }
                    for (const added of item.querySelectorAll(':scope > .tlnetron-heat')) {
                        added.remove();
                    }
                }
                g.removeAttribute('data-tlnetron-colour');
                g.removeAttribute('data-tlnetron-value');
            }
        };
        let observer = null;
        const paint = () => {
            draw();
            if (observer) {
                observer.takeRecords();  // our own changes are not Netron redrawing
            }
        };
        const draw = () => {
            const doc = getDocument();
            if (!doc || !doc.getElementById('canvas')) {
                return;
            }
            clear(doc);
            legend.textContent = '';
            if (scheme === 'none') {
                return;
            }
            const nodes = Array.from(doc.querySelectorAll('#nodes > g.node.graph-node[id^="node-name-"]'));
            const entry = table.get(scheme);
            const values = nodes.map((g) => valueOf(entry, g.id.slice('node-name-'.length), data));
            let colour;
            let range = null;  // the legend's, for a picture: the scale's range, and its swatches
            const swatches = [];
            const categories = entry.categories && entry.categories.map(([, label, c]) => [label, c]);
            if (categories) {
                const map = new Map(categories);
                colour = (v) => map.get(v);
            } else {
                const numbers = values.filter((v) => typeof v === 'number' && v > 0);
                const lo = numbers.length ? Math.min(...numbers) : 1;
                const hi = numbers.length ? Math.max(...numbers) : 1;
                const log = hi / lo >= 100;  // a log scale once the range spans two orders of magnitude
                const t = (v) => (hi === lo ? 1 : log ? Math.log(v / lo) / Math.log(hi / lo) : (v - lo) / (hi - lo));
                colour = (v) => (typeof v === 'number' && v > 0 ? viridis(t(v)) : v === 0 ? ZERO : undefined);
                legend.innerHTML = '';
                const bar = own.createElement('div');
                bar.setAttribute('style', `height:10px;margin:3px 0;background:linear-gradient(to right,${VIRIDIS.join(',')})`);
                range = numbers.length ?
                    `${format(lo)} – ${format(hi)} ${entry.unit}${log ? ' (log scale)' : ''}` : 'no node here has a value';
                const shown = own.createElement('div');
                shown.textContent = range;
                legend.appendChild(bar);
                legend.appendChild(shown);
                if (values.includes(0)) {
                    swatches.push([ZERO, `0 ${entry.unit}`]);
                }
            }
            if (categories) {
                for (const [name, c] of categories) {
                    swatches.push([c, name]);
                }
            }
            swatches.push([NEUTRAL, 'no value']);
            for (const [c, words] of swatches) {
                legend.appendChild(swatch(c, words));
            }
            nodes.forEach((g, i) => {
                const item = g.querySelector(':scope > g.node-item-type');
                if (!item) {
                    return;
                }
                const c = colour(values[i]) || NEUTRAL;
                const path = item.querySelector(':scope > path');
                const text = item.querySelector(':scope > text');
                path.style.setProperty('fill', c);
                text.style.setProperty('fill', ink(c));
                // Netron's export rewrites every path's and text's fill from grapher.css: a clipped <rect>
                // and a <tspan> (which no grapher.css rule names) carry the colour into File > Export too.
                const ns = 'http://www.w3.org/2000/svg';
                const box = path.getBBox();
                const clip = doc.createElementNS(ns, 'clipPath');
                clip.setAttribute('id', `tlnetron-clip-${i}`);
                clip.setAttribute('class', 'tlnetron-heat');
                const shape = doc.createElementNS(ns, 'path');
                shape.setAttribute('d', path.getAttribute('d'));
                clip.appendChild(shape);
                const rect = doc.createElementNS(ns, 'rect');
                rect.setAttribute('class', 'tlnetron-heat');
                for (const [k, v] of [['x', box.x], ['y', box.y], ['width', box.width], ['height', box.height]]) {
                    rect.setAttribute(k, String(v));
                }
                rect.setAttribute('clip-path', `url(#tlnetron-clip-${i})`);
                rect.setAttribute('style', `fill:${c};pointer-events:none`);
                item.insertBefore(clip, path);
                item.insertBefore(rect, text);
                const span = doc.createElementNS(ns, 'tspan');
                span.setAttribute('class', 'tlnetron-heat');
                span.setAttribute('style', `fill:${ink(c)}`);
                span.textContent = text.textContent;
                text.textContent = '';
                text.appendChild(span);
                g.setAttribute('data-tlnetron-colour', c);
                if (values[i] !== undefined) {
                    g.setAttribute('data-tlnetron-value', String(values[i]));
                }
            });
            if (picture) {
                pictureLegend(doc, `colour by ${entry.label}`, range, swatches);
            }
        };
        select.addEventListener('change', () => {
            scheme = select.value;
            if (notice) {
                notice.remove();
                notice = null;
            }
            paint();
        });
        // Netron redraws by building a new canvas content: repaint once its nodes are shown.
        let pending = false;
        let observed = null;
        const watch = () => {
            const doc = getDocument();
            if (doc && doc.body && observed !== doc) {
                observed = doc;
                observer = new doc.defaultView.MutationObserver((records) => {
                    const ours = records.every((r) => box.contains(r.target));  // the legend's own redraw
                    if (ours || pending) {
                        return;
                    }
                    pending = true;
                    doc.defaultView.requestAnimationFrame(() => {
                        pending = false;
                        paint();
                    });
                });
                observer.observe(doc.body, { childList: true, subtree: true });  // kept: paint() drops its own records
            }
        };
        watch();
        paint();
    };
    window.tlnetronHeatmap = { attach };
})();
