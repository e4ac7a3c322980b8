// tlnetron: hand the model, then the companion, to Netron's unmodified web app as file drops
// (what a person does by hand). Netron registers its drop handler only on its welcome screen,
// so we wait for it, drop the model, wait for the graph, then drop the companion.
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
    const body = () => frame.contentDocument && frame.contentDocument.body;
    const has = (name) => body() && body().classList.contains(name);
    const drop = async (entry) => {
        const response = await fetch(entry.url);
        const blob = await response.blob();
        const w = frame.contentWindow;
        const file = new w.File([blob], entry.name, { type: 'application/json' });
        const transfer = new w.DataTransfer();
        transfer.items.add(file);
        const event = new w.DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true });
        body().dispatchEvent(event);
    };
    const files = await (await fetch('/tlnetron/files.json')).json();
    // The welcome screen (drop handler registered) shows after the consent click, if any.
    if (!await until(() => has('welcome') && !has('spinner') && !has('alert') && !has('message'), 24 * 3600 * 1000)) {
        return;
    }
    await drop(files.model);
    const drawn = () => has('default') && frame.contentDocument.querySelector('#canvas[viewBox]');
    if (!await until(drawn, 10 * 60 * 1000) || !files.companion) {
        return;
    }
    await drop(files.companion);
    document.title = document.title + ' + companion';
})();
