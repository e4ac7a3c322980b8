// tlnetron: start Netron's web app from this one file (file://, no server), then hand it the
// model and the companion as file drops, as a person would (the same drops as tlnetron serve).
//
// Netron's index.js (included unmodified, above) loads its modules as module script files
// beside the page (view.js, browser.js, ...), which a browser refuses from file://. This script
// replaces index.js's `window.exports.preload` with one that imports them through the page's
// import map (each module is a data: URL there), and gives the app a host, Netron's own
// browser host with three methods that find files in this page instead of beside it:
// require(id) (a module, through the import map), worker(id) (the layout worker) and
// asset(name) (onnx-metadata.json, stored gzip-compressed in the page). The page holds only
// the readers an ONNX JSON file needs: another format's reader, which Netron tries on a file
// its ONNX reader does not take, matches nothing here (as if the file were not in its format),
// so a broken artifact gets the ONNX reader's own error, as in the served app.
(() => {
    'use strict';
    const data = JSON.parse(document.getElementById('tlnetron-data').textContent);
    const bytes = (base64) => {
        const text = atob(base64);
        const out = new Uint8Array(text.length);
        for (let i = 0; i < text.length; i++) {
            out[i] = text.charCodeAt(i);
        }
        return out;
    };
    const gunzip = (base64) => new Response(new Blob([bytes(base64)]).stream()
        .pipeThrough(new DecompressionStream('gzip'))).blob();
    const inPage = (id) => `${id.replace(/^\.\//, '')}.js`;

    const pageHost = (Host) => class extends Host {
        async require(id) {
            const name = inPage(id);
            if (!data.modules.includes(name)) {
                return { ModelFactory: class { async match() { return null; } } };
            }
            return import(name);
        }
        worker(id) {
            if (inPage(id) !== 'worker.js') {
                throw new Error(`The worker '${id}' is not in this page.`);
            }
            // Workers have no import map: worker.js's import('./dagre.js') gets dagre's data: URL.
            let source = data.worker.source;
            for (const [specifier, url] of Object.entries(data.worker.imports)) {
                source = source.split(`import('${specifier}')`).join(`import('${url}')`);
            }
            return new this.window.Worker(`data:text/javascript;charset=utf-8,${encodeURIComponent(source)}`, { type: 'module' });
        }
        async asset(file) {
            this._pageAssets = this._pageAssets || new Map();
            if (!this._pageAssets.has(file)) {
                const stored = data.assets[file];
                const text = stored ? gunzip(stored).then((blob) => blob.text()) :
                    Promise.reject(new Error(`The file '${file}' is not in this page.`));
                this._pageAssets.set(file, text);
            }
            return this._pageAssets.get(file);
        }
    };

    window.exports.preload = (callback) => {
        // browser.js and view.js set window.exports.browser and .view when they run.
        Promise.all([import('browser.js'), import('view.js')]).then(() => {
            const browser = window.exports.browser;
            window.exports.browser = Object.assign({}, browser, { Host: pageHost(browser.Host) });
            callback();
        }, (error) => callback(null, error));
    };

    const expired = Date.now() > data.expires;
    if (expired) {
        document.addEventListener('DOMContentLoaded', () => {
            document.getElementById('tlnetron-note').classList.add('tlnetron-expired');
        });
    }

    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const until = async (test, ms) => {
        const end = Date.now() + ms;
        while (Date.now() < end) {
            if (test()) {
                return true;
            }
            await sleep(100);
        }
        return false;
    };
    const has = (name) => document.body.classList.contains(name);
    // Netron sets the picker's accept list in the same task that registers its drop handler,
    // once its cookie notice (shown on every visit: file:// pages keep no cookie) is accepted.
    const ready = () => {
        const picker = document.getElementById('open-file-dialog');
        return picker && picker.hasAttribute('accept') &&
            has('welcome') && !has('spinner') && !has('notification') && !has('alert') && !has('message');
    };
    const drop = async (entry) => {
        const blob = await gunzip(entry.gzip);
        const transfer = new DataTransfer();
        transfer.items.add(new File([blob], entry.name, { type: 'application/json' }));
        document.body.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    };
    const open = async () => {
        const day = 24 * 3600 * 1000;
        if (expired || !await until(ready, day)) {
            return;
        }
        const loading = () => has('spinner') || has('default') || has('alert');
        for (let attempt = 0; attempt < 5; attempt++) {
            await drop(data.model);
            if (await until(loading, 2000)) {
                break;
            }
        }
        const drawn = () => has('default') && document.querySelector('#canvas[viewBox]');
        if (!await until(drawn, 10 * 60 * 1000)) {
            return;
        }
        document.title = `${document.title} + model`;
        if (!data.companion) {
            return;
        }
        await drop(data.companion);
        document.title = document.title.replace(/ \+ model$/, ' + companion');
    };
    // The heat map: the same files Netron was handed, coloured by ?colour= or the page's choice.
    const heat = async () => {
        const parse = async (entry) => (entry ? JSON.parse(await (await gunzip(entry.gzip)).text()) : null);
        const asked = new URLSearchParams(window.location.search).get('colour');
        window.tlnetronHeatmap.attach(() => document, document.body, await parse(data.model), await parse(data.companion),
            data.schemes, asked === null ? data.colour : asked);
    };
    window.addEventListener('load', () => {
        open().then(heat);
    });
})();
