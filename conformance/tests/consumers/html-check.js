// Opens HTML reports in Debian's headless chromium (driven by playwright-core) at 1280 and
// 375 px wide with every <details> unfolded, takes a full-page screenshot of each
// (OUT_DIR/<page name>-<width>.png), and prints one JSON line per page and width: the page's
// scroll width against the viewport's, whether it has a viewport meta, and the elements
// sticking out on the right (none when nothing overflows), and the cells of the rows' narrow
// columns whose words were broken across lines (none when the columns keep their width).
// Usage: node html-check.js NODE_DIR OUT_DIR PAGE.html...
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { chromium } = require(path.join(path.resolve(process.argv[2]), 'node_modules', 'playwright-core'));

async function main() {
  const out = process.argv[3];
  const pages = process.argv.slice(4).map(p => path.resolve(p));
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'stoat-html-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    for (const page of pages) for (const width of [1280, 375]) {
      const prefix = path.join(out, path.basename(page, '.html'));
      const tab = await context.newPage({});
      await tab.setViewportSize({ width, height: 900 });
      await tab.goto('file://' + page);
      const seen = await tab.evaluate(() => {
        document.querySelectorAll('details').forEach(d => { d.open = true; });
        const root = document.documentElement;
        const limit = root.clientWidth;
        const offenders = [];
        for (const el of document.body.querySelectorAll('*')) {
          const box = el.getBoundingClientRect();
          // Inside a box that scrolls, sticking out is that box's business.
          let clipped = false;
          for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
            const style = getComputedStyle(p);
            if (style.overflowX === 'auto' || style.overflowX === 'scroll' || style.overflowX === 'hidden') { clipped = true; break; }
          }
          if (!clipped && box.right > limit + 1) offenders.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' right=' + Math.round(box.right));
        }
        // A column that keeps its width breaks no word: a visible cell of the rows' narrow
        // columns (level, tier, section) spans at most one line per word.
        const crushed = [];
        for (const cell of document.querySelectorAll('table.rows td.wide')) {
          if (cell.getBoundingClientRect().width === 0) continue;
          const range = document.createRange();
          range.selectNodeContents(cell);
          const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
          const words = cell.textContent.trim().split(/\s+/).length;
          if (tops.size > words) crushed.push(cell.textContent.trim());
        }
        return {
          crushed: crushed.slice(0, 10),
          scroll_width: root.scrollWidth, client_width: limit,
          viewport_meta: Boolean(document.querySelector('meta[name=viewport]')),
          offenders: offenders.slice(0, 10),
        };
      });
      await tab.screenshot({ path: `${prefix}-${width}.png`, fullPage: true });
      console.log(JSON.stringify({ page: path.basename(page, '.html'), width, ...seen }));
      await tab.close();
    }
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}
main().catch(e => { console.error(e); process.exit(1); });
