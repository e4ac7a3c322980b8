// tlnetron: hand the model, then the companion, to Netron's unmodified web app as file drops
// (what a person does by hand). Netron registers its drop handler only on its welcome screen,
// after its cookie notice (if shown) was accepted, so we wait for that handler, drop the
// model, wait for the graph, then drop the companion.
(async () => {
    const frame = document.getElementById('netron');
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const until = async (test, ms) => {
        const end = Date.now() + ms;
        while (Date.now() < end) {
            try {
                if (test()) {
                    return true;
                }
            } catch {
                // the frame may be navigating
            }
            await sleep(100);
        }
        return false;
    };
    const doc = () => frame.contentDocument;
    const has = (name) => doc().body.classList.contains(name);
    // Netron sets the picker's accept list in the same task that registers its drop handler.
    const ready = () => doc().getElementById('open-file-dialog').hasAttribute('accept') &&
        has('welcome') && !has('spinner') && !has('notification') && !has('alert') && !has('message');
    const consentShown = () => has('notification') && /cookies/.test(doc().getElementById('message-text').innerText);
    // Netron stores the Accept click in a cookie for the parent domain, which browsers reject
    // on 127.0.0.1; record the person's own click for this origin so a reload does not ask again.
    const rememberConsent = () => {
        if (!/(^|;\s*)consent=/.test(document.cookie)) {
            document.cookie = `consent=${Date.now()}; path=/; max-age=${30 * 24 * 3600}; SameSite=Strict`;
        }
    };
    const drop = async (entry) => {
        const blob = await (await fetch(entry.url)).blob();
        const w = frame.contentWindow;
        const transfer = new w.DataTransfer();
        transfer.items.add(new w.File([blob], entry.name, { type: 'application/json' }));
        doc().body.dispatchEvent(new w.DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    };
    const files = await (await fetch('/tlnetron/files.json')).json();
    let asked = false;
    const day = 24 * 3600 * 1000;
    if (!await until(() => {
        asked = asked || consentShown();
        return ready();
    }, day)) {
        return;
    }
    if (asked) {
        rememberConsent();
    }
    const loading = () => has('spinner') || has('default') || has('alert');
    for (let attempt = 0; attempt < 5; attempt++) {
        await drop(files.model);
        if (await until(loading, 2000)) {
            break;
        }
    }
    const drawn = () => has('default') && doc().querySelector('#canvas[viewBox]');
    if (!await until(drawn, 10 * 60 * 1000)) {
        return;
    }
    document.title = document.title + ' + model';
    if (!files.companion) {
        return;
    }
    await drop(files.companion);
    document.title = document.title.replace(/ \+ model$/, ' + companion');
})().then(async () => {
    // The heat map: the same files Netron was handed, coloured by ?colour= or --colour-by.
    const files = await (await fetch('/tlnetron/files.json')).json();
    const model = await (await fetch(files.model.url)).json();
    const companion = files.companion ? await (await fetch(files.companion.url)).json() : null;
    const asked = new URLSearchParams(window.location.search).get('colour');
    const frame = document.getElementById('netron');
    window.tlnetronHeatmap.attach(() => frame.contentDocument, document.body, model, companion, files.schemes,
        asked === null ? files.colour : asked);
});
