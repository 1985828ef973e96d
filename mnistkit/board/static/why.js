// The Why panel (#why): why the network gave its answer, and where the drawing sits among what it knows.
// Beside Inside, it opens from the answer (#why-open); while it is open each answer's picture goes to
// /board/why?versus=<the runner-up>, which gives, from one run of the served model, each pixel's exact share of the
// answer's logit (the pixels' shares plus the bias equal the logit: the network is piecewise linear), the same for
// the runner-up and their difference, and the gradient of the logit (where ink would raise it: the missing ink).
// The map is GET /board/atlas: the test digits placed in 2-D from the last hidden layer, coloured by digit, with the
// drawing as a dot and its 5 nearest test digits. "Not a digit" (#not-a-digit) is said under the answer whether or
// not the panel is open. board.js calls window.whyPanel: show(answer, blob, name), language(code).
"use strict";
(() => {
const TEXT = {  // [English, 中文]
  open: ["Why?", "为什么？"],
  close: ["Hide why", "收起为什么"],
  title: ["Why this digit", "为什么是这个数字"],
  intro: ["The network is piecewise linear: for this drawing, with its active ReLU units as they are, each logit is a sum over the pixels plus a bias. So each pixel's share is exact.",
          "网络是分段线性的：对这张图，在其激活的 ReLU 单元不变时，每个 logit 都是各像素之和加一个偏置。所以每个像素的贡献是精确的。"],
  shares: ["Each pixel's share of logit {d}: x × d(logit {d})/dx. Red pushes {d} up, blue down.",
           "每个像素对 logit {d} 的贡献：x × d(logit {d})/dx。红色把 {d} 往上推，蓝色往下拉。"],
  sum: ["The pixels give {s}, the biases {b}: {s} {sign} {m} = {l}, the logit of {d}.",
        "像素合计 {s}，偏置 {b}：{s} {sign} {m} = {l}，即 {d} 的 logit。"],
  versus: ["Why {d} and not {e}: {d}'s shares less {e}'s. Red is for {d}, blue for {e}; the logits differ by {g}.",
           "为什么是 {d} 而不是 {e}：{d} 的贡献减去 {e} 的。红色支持 {d}，蓝色支持 {e}；两者 logit 相差 {g}。"],
  missing: ["Missing ink: how far logit {d} moves per unit of ink added at each pixel (the gradient). Red: ink here makes it more a {d}; blue: less.",
            "缺少的墨迹：在每个像素加一份墨迹，logit {d} 会变化多少（梯度）。红色：这里加墨更像 {d}；蓝色：更不像。"],
  missingVersus: ["Ink that would make it a {e} rather than {d}: red where the gradient of logit {e} exceeds {d}'s.",
                  "能让它更像 {e} 而不是 {d} 的墨迹：红色处 logit {e} 的梯度大于 {d} 的。"],
  line: ["forward(): {line}  ({at})", "forward()：{line}（{at}）"],
  atlas: ["The map of what it knows: the {n} test digits placed by their last hidden layer ({layer}), coloured by digit; the black dot is the drawing, the ringed ones its 5 nearest test digits.",
          "它所知道的地图：{n} 个测试数字按最后一个隐藏层（{layer}）放置，按数字着色；黑点是你的图，带圈的是离它最近的 5 个测试数字。"],
  making: ["Making the map: {done} of {total} test digits…", "正在制作地图：{done} / {total} 个测试数字…"],
  nearest: ["Its 5 nearest test digits (label, distance)", "离它最近的 5 个测试数字（标签，距离）"],
  notDigit: ["That is not a digit, or not like any the network was shown: it lies far from every test digit it knows.",
             "这不是数字，至少不像网络见过的任何数字：它离网络认识的所有测试数字都很远。"],
  refused: ["No reasons to show: {}", "无法显示原因：{}"],
  noMap: ["No map: {}", "没有地图：{}"],
};
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                 "#17becf"];  // digit 0-9 on the map
const SCALE = 6;         // a 28x28 map drawn at 168x168
const MAP_SIZE = 300;    // the atlas's canvas side (px)
const POLL_MS = 1000;    // GET /board/atlas again this often while it is made
let language = "en";
const T = new Proxy(TEXT, {get: (text, key) => text[key][language === "zh" ? 1 : 0]});
// The board's routes answer an error with its Chinese twin ("zh") beside its line when asked (TWINS, as board.js)
const TWINS = {headers: {"Accept-Language": "en, zh"}};
const errorLine = found => (language === "zh" && found.zh) || found.error;  // a refusal's line in the page's language
let open = false, answer = null, reasons = null, atlas = null, asked = 0, polling = null;
const toggle = document.getElementById("why-open");
const panel = document.getElementById("why");
const notDigit = document.getElementById("not-a-digit");

function say(key, values = {}) {
  let text = T[key];
  for (const [k, v] of Object.entries(values)) text = text.split(`{${k}}`).join(String(v));
  return text;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function fixed(v) { return Number(v).toFixed(3); }

function paintShares(canvas, values, input) {  // red positive, blue negative, over the drawing in light gray
  const context = canvas.getContext("2d");
  const image = context.createImageData(28, 28);
  const strongest = Math.max(1e-12, ...values.map(Math.abs));
  values.forEach((v, i) => {
    const a = Math.min(1, Math.abs(v) / strongest), ink = input ? input[i] / 255 : 0;
    const base = 255 - 70 * ink;  // the drawing, faint
    const rgb = v >= 0 ? [base, base * (1 - a), base * (1 - a)] : [base * (1 - a), base * (1 - a), base];
    image.data.set([...rgb.map(Math.round), 255], 4 * i);
  });
  const small = document.createElement("canvas");
  small.width = small.height = 28;
  small.getContext("2d").putImageData(image, 0, 0);
  context.imageSmoothingEnabled = false;
  context.drawImage(small, 0, 0, canvas.width, canvas.height);
}

function figure(kind, values, input, captionLines) {
  const box = element("figure", `why-${kind}`);
  const canvas = element("canvas");
  canvas.width = canvas.height = 28 * SCALE;
  canvas.setAttribute("role", "img");
  paintShares(canvas, values, input);
  const caption = element("figcaption");
  for (const [className, text] of captionLines) caption.append(element("span", className, text));
  box.append(canvas, caption);
  canvas.setAttribute("aria-label", captionLines[0][1]);
  return box;
}

function sum(values) { return values.reduce((a, b) => a + b, 0); }

function sumSaid(s, b, l, d) {  // the caption's sum: "9.752 + 0.222 = 9.974", a negative bias written "− 0.087"
  return say("sum", {s: fixed(s), b: fixed(b), sign: b < 0 ? "−" : "+", m: fixed(Math.abs(b)), l: fixed(l), d});
}

function showReasons() {
  const view = panel.querySelector(".why-maps");
  view.replaceChildren();
  if (!reasons) return;
  if (reasons.error) { view.append(element("p", "refused", say("refused").replace("{}", errorLine(reasons)))); return; }
  const c = reasons.contributions, d = c.digit, lineText = say("line", {line: reasons.line, at: reasons.at});
  const s = sum(c.pixels);
  view.append(figure("shares", c.pixels, reasons.input, [
    ["what", say("shares", {d})],
    ["sum", sumSaid(s, c.bias, reasons.logits[d], d)],
    ["line", lineText]]));
  if (reasons.versus) {
    const e = reasons.versus.digit;
    view.append(figure("versus", reasons.difference.pixels, reasons.input, [
      ["what", say("versus", {d, e, g: fixed(reasons.logits[d] - reasons.logits[e])})],
      ["sum", sumSaid(sum(reasons.difference.pixels), reasons.difference.bias, reasons.logits[d] - reasons.logits[e],
                      `${d} − ${e}`)],
      ["line", lineText]]));
  }
  view.append(figure("missing", reasons.missing_ink.pixels, reasons.input, [
    ["what", say("missing", {d})], ["line", lineText]]));
  showPlace();
}

function bytes(data) {
  const raw = atob(data);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function showAtlas() {
  const box = panel.querySelector(".why-atlas");
  const note = box.querySelector(".atlas-note");
  if (!atlas) { note.textContent = ""; return; }
  if (atlas.error) { note.textContent = say("noMap").replace("{}", errorLine(atlas)); return; }
  if (atlas.status === "making") { note.textContent = say("making", {done: atlas.done, total: atlas.total || "?"}); return; }
  note.textContent = say("atlas", {n: atlas.count.toLocaleString(), layer: atlas.layer});
  if (!atlas.xy) {
    const steps = new Uint16Array(bytes(atlas.points).buffer);
    atlas.xy = steps;
    atlas.digits = bytes(atlas.labels);
  }
  showPlace();
}

function toMap(x, y) {  // a point of the first two components -> canvas pixels (the atlas's box)
  const [x0, y0, x1, y1] = atlas.box;
  return [4 + (x - x0) / ((x1 - x0) || 1) * (MAP_SIZE - 8), MAP_SIZE - 4 - (y - y0) / ((y1 - y0) || 1) * (MAP_SIZE - 8)];
}

function showPlace() {  // the map's points, the drawing's dot and its neighbours
  const canvas = panel.querySelector(".why-atlas canvas");
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, MAP_SIZE, MAP_SIZE);
  const near = panel.querySelector(".why-nearest");
  near.replaceChildren();
  if (!atlas || !atlas.xy) return;
  const xy = atlas.xy, span = MAP_SIZE - 8;
  context.globalAlpha = 0.45;
  for (let i = 0; i < atlas.count; i++) {
    context.fillStyle = COLOURS[atlas.digits[i]];
    context.fillRect(4 + xy[2 * i] / 65535 * span - 1, MAP_SIZE - 4 - xy[2 * i + 1] / 65535 * span - 1, 2, 2);
  }
  context.globalAlpha = 1;
  const place = reasons && !reasons.error ? reasons.atlas : null;
  if (!place) return;
  near.append(element("p", "nearest-title", T.nearest));
  for (const n of place.nearest) {
    const i = n.record;
    context.strokeStyle = COLOURS[n.label];
    context.lineWidth = 2;
    context.beginPath();
    context.arc(4 + xy[2 * i] / 65535 * span, MAP_SIZE - 4 - xy[2 * i + 1] / 65535 * span, 6, 0, 2 * Math.PI);
    context.stroke();
    const item = element("figure", "neighbour");
    const thumb = element("canvas");
    thumb.width = thumb.height = 28;
    const image = thumb.getContext("2d").createImageData(28, 28);
    (n.input || []).forEach((v, k) => image.data.set([v, v, v, 255], 4 * k));
    thumb.getContext("2d").putImageData(image, 0, 0);
    item.append(thumb, element("figcaption", "", `${n.label} · ${fixed(n.distance)}`));
    near.append(item);
  }
  const [px, py] = toMap(place.x, place.y);
  context.fillStyle = "#000";
  context.beginPath();
  context.arc(Math.max(4, Math.min(MAP_SIZE - 4, px)), Math.max(4, Math.min(MAP_SIZE - 4, py)), 6, 0, 2 * Math.PI);
  context.fill();
  panel.querySelector(".why-atlas").dataset.x = String(px);
}

async function loadAtlas() {
  clearTimeout(polling);
  try {
    const response = await fetch("/board/atlas", TWINS);
    const found = await response.json();
    atlas = response.status === 200 || response.status === 202 ? found : {error: found.error || String(response.status),
                                                                         zh: found.zh};
  } catch (e) {
    atlas = {error: String(e)};
  }
  showAtlas();
  if (atlas.status === "making" && open) polling = setTimeout(loadAtlas, POLL_MS);
}

function runnerUp(probabilities) {
  let best = -1, second = -1;
  probabilities.forEach((p, d) => {
    if (best < 0 || p > probabilities[best]) { second = best; best = d; }
    else if (second < 0 || p > probabilities[second]) second = d;
  });
  return second;
}

async function ask() {
  if (!open || !answer) return;
  const mine = ++asked;
  let found;
  try {
    const response = await fetch(`/board/why?versus=${runnerUp(answer.probabilities)}`, {method: "POST", body: answer.blob,
      headers: {...TWINS.headers, "Content-Type": answer.blob.type || "application/octet-stream",
                "X-Filename": encodeURIComponent(answer.name)}});
    found = await response.json();
  } catch (e) {
    found = {error: String(e)};
  }
  if (mine !== asked) return;
  reasons = found;
  showReasons();
  document.body.dataset.whys = String(Number(document.body.dataset.whys || 0) + 1);
}

function showNotDigit() {
  const said = Boolean(answer && answer.notADigit);
  notDigit.hidden = !said;
  notDigit.textContent = said ? T.notDigit : "";
}

function build() {
  panel.append(element("h2", "why-title"), element("p", "intro"), element("div", "why-maps"));
  const map = element("div", "why-atlas");
  const canvas = element("canvas");
  canvas.width = canvas.height = MAP_SIZE;
  canvas.setAttribute("role", "img");
  const legend = element("p", "atlas-legend");
  COLOURS.forEach((colour, d) => {
    const key = element("span", "key", String(d));
    key.style.color = colour;
    legend.append(key);
  });
  map.append(canvas, legend, element("p", "atlas-note"), element("div", "why-nearest"));
  panel.append(map);
  toggle.hidden = false;
  toggle.addEventListener("click", () => {
    open = !open;
    panel.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    label();
    if (open) { loadAtlas(); ask(); }
  });
  label();
}

function label() {
  toggle.textContent = open ? T.close : T.open;
  panel.querySelector(".why-title").textContent = T.title;
  panel.setAttribute("aria-label", T.title);  // index.html's is English
  panel.querySelector(".intro").textContent = T.intro;
  panel.querySelector(".why-atlas canvas").setAttribute("aria-label", T.atlas);
}

window.whyPanel = {
  show(shown, blob, name) {  // an answer to a picture (or null: none), and the picture it answers
    answer = shown ? {probabilities: shown.probabilities, blob, name, notADigit: shown.not_a_digit === true} : null;
    showNotDigit();
    if (!answer) { reasons = null; showReasons(); return; }
    ask();
  },
  language(code) {
    language = code;
    label();
    showNotDigit();
    showReasons();
    showAtlas();
  },
};
build();
fetch("/board/atlas").catch(() => null);  // the map is made in the background from the page's first visit
})();
