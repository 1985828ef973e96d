// Training played back (#history): the served checkpoint folder's --history snapshots (GET /board/history), the
// drawing read by each of them (POST /board/playback, the same picture board.js sent) and, at the step the slider
// is on, the drawing's probabilities, the chosen unit's weights (GET /board/history/unit: the unit last shown in
// the Inside panel, else y1's or fc1's unit 0) and the test accuracy mnist_test.py recorded then; below, the ten
// probabilities over training as a small plot. Loaded after inside.js and before board.js: it wraps
// window.insidePanel's show, language and model, so board.js tells it each answer as it tells the Inside panel, and
// asks board.js for the picture shown (window.boardPicture).
"use strict";
(() => {
const TEXT = {  // each word of the panel: [English, 中文]
  open: ["Play training back", "回放训练过程"],
  close: ["Hide the playback", "收起回放"],
  title: ["Training played back", "回放训练过程"],
  intro: ["The snapshots mnist_backward.py --history kept while it trained. Move the slider: your drawing as the " +
          "network read it at that step.", "mnist_backward.py --history 在训练中保存的快照。拖动滑块：看网络在那一步怎样识别你写的数字。"],
  step: ["global_step {s} of {last} (snapshot {k} of {n})", "训练步数 global_step {s} / {last}（第 {k} / {n} 个快照）"],
  accuracy: ["test accuracy then: {a}", "当时的测试准确率：{a}"],
  unscored: ["test accuracy then: not scored (run mnist_test.py beside the trainer)",
             "当时的测试准确率：未评估（训练时同时运行 mnist_test.py）"],
  reads: ["At this step it reads {d} ({p}).", "这一步识别为 {d}（{p}）。"],
  unit: ["{layer} unit {u}: its weights from {from} at this step (red positive, blue negative; strongest ±{m})",
         "{layer} 第 {u} 个单元在这一步来自 {from} 的权重（红正蓝负；最强 ±{m}）"],
  plot: ["The ten probabilities over training: one line a digit, the step marked.",
         "十个概率在训练中的变化：每个数字一条线，竖线是当前这一步。"],
  draw: ["Draw a digit to play it back.", "先写一个数字，再回放。"],
  none: ["No playback: {}", "无法回放：{}"],
  input: ["the input x", "输入 x"],
};
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf"];  // digit d's line in the plot and its legend
let language = "en";
const T = new Proxy(TEXT, {get: (text, key) => text[key][language === "zh" ? 1 : 0]});
// The board's routes answer an error with its Chinese twin ("zh") beside its line when asked (TWINS, as board.js):
// a refusal is kept as {en, zh} and said in the page's language, again when it changes (as board.js's local)
const TWINS = {headers: {"Accept-Language": "en, zh"}};
const local = line => (line !== null && typeof line === "object" ? (language === "zh" && line.zh) || line.en : line);
let open = false;
let list = null;       // GET /board/history's snapshots, or null
let played = null;     // POST /board/playback's answer for the picture shown, or null
let refusal = "";      // the line of a refused request ({en, zh}, or the browser's own words), shown instead
let asked = 0;         // requests made: an older one's answer is dropped
let served = "";       // the model played back: its source and version (/board/model's)
const inside = window.insidePanel;
const section = document.getElementById("history");
const toggle = document.getElementById("history-open");

function say(key, values = {}) {
  return T[key].replace(/\{(\w+)\}/g, (found, name) => (name in values ? String(values[name]) : found));
}
function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}
const percent = p => (100 * p).toFixed(1) + "%";

async function json(url, options) {  // the answer's JSON, or throws an Error whose .line is the refusal's {en, zh}
  const response = await fetch(url, {...options, headers: {...TWINS.headers, ...(options && options.headers)}});
  let answer = null;
  try { answer = await response.json(); } catch (e) { /* not JSON */ }
  if (response.ok) return answer;
  const refused = new Error(answer && answer.error ? answer.error : `HTTP ${response.status}`);
  refused.line = answer && answer.error ? {en: answer.error, zh: answer.zh || answer.error} : refused.message;
  throw refused;
}

async function load() {  // the list, then the picture shown played back; each answer shown as it comes
  const mine = ++asked;
  try {
    list = (await json("/board/history")).snapshots;
    refusal = "";
    const picture = window.boardPicture && window.boardPicture();
    played = picture ? await json("/board/playback", {method: "POST", body: picture.blob, headers: {
      "Content-Type": picture.blob.type || "application/octet-stream",
      "X-Filename": encodeURIComponent(picture.name)}}) : null;
  } catch (e) {
    if (mine !== asked) return;
    refusal = e.line || e.message;  // a fetch that failed: the browser's words
    played = null;
  }
  if (mine !== asked) return;
  show();
}

function build() {
  section.append(element("h2", "", ""), element("p", "intro"), element("p", "refused"));
  const controls = element("div", "controls");
  const slider = element("input", "slider");
  slider.type = "range";
  slider.min = "0";
  slider.step = "1";
  slider.id = "history-slider";
  const label = element("label", "step");
  label.htmlFor = "history-slider";
  controls.append(slider, label, element("p", "accuracy"), element("p", "reads"));
  const view = element("div", "view");
  view.append(element("ol", "bars"), element("figure", "unit"));
  const plot = element("figure", "plot");
  const canvas = element("canvas");
  canvas.width = 360;
  canvas.height = 140;
  plot.append(canvas, element("figcaption"), element("ol", "legend"));
  section.append(controls, view, plot);
  slider.addEventListener("input", showStep);
  toggle.addEventListener("click", () => {
    open = !open;
    section.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    label_();
    if (open) load();
  });
}

function label_() {  // the words of the panel's own elements, in the page's language
  toggle.textContent = open ? T.close : T.open;
  section.querySelector("h2").textContent = T.title;
  section.setAttribute("aria-label", T.title);  // index.html's is English
  section.querySelector(".intro").textContent = T.intro;
  section.querySelector(".plot figcaption").textContent = T.plot;
  const legend = section.querySelector(".legend");
  legend.replaceChildren(...COLOURS.map((colour, d) => {
    const item = element("li", "", String(d));
    item.style.borderColor = colour;
    return item;
  }));
}

function show() {
  const refused = section.querySelector(".refused");
  refused.textContent = refusal ? say("none").replace("{}", () => local(refusal)) : (played ? "" : T.draw);
  section.dataset.state = refusal ? "refused" : played ? "played" : "listed";
  const slider = section.querySelector(".slider");
  const shown = !refusal && list && list.length;
  section.querySelector(".controls").hidden = !shown;
  section.querySelector(".view").hidden = section.querySelector(".plot").hidden = !(shown && played);
  if (!shown) return;
  const at = Math.min(Number(slider.value) || list.length - 1, list.length - 1);
  slider.max = String(list.length - 1);
  slider.value = String(slider.dataset.moved ? at : list.length - 1);
  showStep();
}

function showStep(event) {
  const slider = section.querySelector(".slider");
  if (event) slider.dataset.moved = "1";
  const k = Number(slider.value), snapshot = list[k], last = list[list.length - 1].global_step;
  section.dataset.step = String(snapshot.global_step);
  section.querySelector(".step").textContent = say("step", {s: snapshot.global_step, last, k: k + 1, n: list.length});
  const accuracy = section.querySelector(".accuracy");
  accuracy.textContent = snapshot.accuracy == null ? T.unscored : say("accuracy", {a: percent(snapshot.accuracy)});
  accuracy.dataset.accuracy = snapshot.accuracy == null ? "" : String(snapshot.accuracy);
  if (!played) return;
  const answer = played.snapshots.find(s => s.global_step === snapshot.global_step);
  if (!answer) return;
  section.querySelector(".reads").textContent = say("reads", {d: answer.digit,
                                                              p: percent(answer.probabilities[answer.digit])});
  section.dataset.digit = String(answer.digit);
  const bars = section.querySelector(".bars");
  bars.replaceChildren(...answer.probabilities.map((p, d) => {
    const item = element("li", d === answer.digit ? "top" : "");
    const bar = element("span", "bar");
    bar.style.width = `${Math.round(100 * p)}%`;
    item.dataset.probability = String(p);
    item.append(element("span", "d", String(d)), bar, element("span", "p", percent(p)));
    return item;
  }));
  plot(k);
  showUnit(snapshot.global_step);
}

function plot(k) {  // each digit's probability over the snapshots, and the slider's step
  const canvas = section.querySelector(".plot canvas"), context = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 6, n = played.snapshots.length;
  const x = i => pad + (n > 1 ? i / (n - 1) : 0) * (w - 2 * pad), y = p => h - pad - p * (h - 2 * pad);
  context.clearRect(0, 0, w, h);
  context.strokeStyle = "#ddd";
  context.strokeRect(pad, pad, w - 2 * pad, h - 2 * pad);
  for (let d = 0; d < 10; d++) {
    context.strokeStyle = COLOURS[d];
    context.lineWidth = d === played.snapshots[k].digit ? 2.5 : 1;
    context.beginPath();
    played.snapshots.forEach((s, i) => (i ? context.lineTo(x(i), y(s.probabilities[d])) :
                                         context.moveTo(x(i), y(s.probabilities[d]))));
    context.stroke();
  }
  context.strokeStyle = "#000";
  context.lineWidth = 1;
  context.beginPath();
  context.moveTo(x(k), pad);
  context.lineTo(x(k), h - pad);
  context.stroke();
}

function chosenUnit() {  // the unit the Inside panel shows (its first column), else the first weighted layer's 0
  const detail = document.querySelector('#inside .net[data-slot="first"] .detail');
  if (detail && detail.dataset.layer && detail.dataset.unit) return [detail.dataset.layer, detail.dataset.unit];
  return [played && played.model && played.model.network === "LeNet-5" ? "conv1" : "y1", "0"];
}

async function showUnit(step) {
  const [layer, unit] = chosenUnit(), figure = section.querySelector("figure.unit");
  const mine = `${step} ${layer} ${unit}`;
  figure.dataset.asked = mine;
  let answer;
  try {
    answer = await json(`/board/history/unit?step=${step}&layer=${encodeURIComponent(layer)}&unit=${unit}`);
  } catch (e) {
    if (figure.dataset.asked !== mine) return;  // a language switch asks again: its answer comes in the new one
    figure.replaceChildren(element("figcaption", "refused", local(e.line || e.message)));
    return;
  }
  if (figure.dataset.asked !== mine) return;  // the slider moved on meanwhile
  const part = answer.incoming, size = part.height * part.width;
  if (!part.data) {  // a dense layer after maps (LeNet-5's fc1): its 3,136 weights are not one picture
    figure.replaceChildren(element("figcaption", "", `${layer} ${unit}: ${part.values.length} weights, ` +
                                                     `${part.min.toPrecision(3)} to ${part.max.toPrecision(3)}`));
    figure.dataset.shown = mine;
    return;
  }
  const text = atob(part.data), strongest = Math.max(Math.abs(part.min[0]), Math.abs(part.max[0]));
  const canvas = element("canvas");
  canvas.width = part.width;
  canvas.height = part.height;
  canvas.style.width = canvas.style.height = "112px";
  const image = canvas.getContext("2d").createImageData(part.width, part.height);
  for (let i = 0; i < size; i++) {
    const v = part.min[0] + text.charCodeAt(i) / 255 * (part.max[0] - part.min[0]);
    const t = strongest > 0 ? Math.min(1, Math.abs(v) / strongest) : 0, faded = Math.round(255 * (1 - t));
    image.data.set(v >= 0 ? [255, faded, faded, 255] : [faded, faded, 255, 255], 4 * i);
  }
  canvas.getContext("2d").putImageData(image, 0, 0);
  figure.dataset.shown = mine;
  figure.replaceChildren(canvas, element("figcaption", "", say("unit", {layer, u: unit, from: T.input,
                                                                      m: strongest.toPrecision(3)})));
}

const STYLE = `
#history { margin-top: 16px; border-top: 1px solid #ccc; }
#history h2 { font-size: 1.1rem; margin: 0.6em 0 0.3em; }
#history .intro { color: #555; font-size: 0.9rem; }
#history .refused { color: #b00020; overflow-wrap: anywhere; }
#history .slider { width: 100%; max-width: 420px; display: block; }
#history .step, #history .accuracy, #history .reads { font-size: 0.9rem; margin: 0.3em 0; display: block; }
#history .view { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
#history .bars { list-style: none; padding: 0; margin: 0; width: 220px; }
#history .bars li { display: grid; grid-template-columns: 1.5ch 1fr 6ch; gap: 6px; align-items: center;
                    font-size: 0.85rem; font-variant-numeric: tabular-nums; }
#history .bars .bar { height: 10px; background: #888; border-radius: 2px; }
#history .bars li.top .bar { background: #d33; }
#history figure { margin: 0; max-width: 360px; }
#history figcaption { font-size: 0.8rem; color: #444; }
#history canvas { image-rendering: pixelated; display: block; max-width: 100%; }
#history .legend { list-style: none; display: flex; gap: 6px; padding: 0; margin: 4px 0; font-size: 0.8rem; }
#history .legend li { border-bottom: 3px solid; padding: 0 3px; }
`;
document.head.append(element("style", "", STYLE));
build();
label_();
window.insidePanel = {
  ...inside,
  show(answer) {
    inside.show(answer);
    if (open && answer) load();
  },
  language(code) {
    inside.language(code);
    language = code;
    label_();
    if (list || refusal) show();  // a refusal too is said again, in the new language, with no new request
  },
  model(described) {  // asked every few seconds: a new model (a newer checkpoint, a learn) is played back again
    inside.model(described);
    toggle.hidden = !described || described.form !== "checkpoint";
    const key = described ? `${described.source} ${described.version}` : "";
    if (open && key !== served) load();
    served = key;
  },
};
})();
