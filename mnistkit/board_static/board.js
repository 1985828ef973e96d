// The drawing board's page: strokes on #board are sent as a PNG to /board/predict when each one ends, and the
// answer (digit, ten probabilities, the 28x28 input after the app's own preparation) is shown. No library.
// The page speaks Chinese or English: the browser's language, until the switch (#lang) picks one, which is kept.
"use strict";

const TEXT = {
  en: {
    title: "MNIST drawing board", hint: "Draw one digit, or drop a photo of one on the page.",
    keys: "Keyboard: focus the board, Space puts the pen down or lifts it, arrows move it (Shift: small steps).",
    predict: "Predict", undo: "Undo", clear: "Clear", photo: "Photo:", reads: "The network reads",
    sees: "What the network sees: the 28x28 input after the app's preparation",
    board: "drawing board", input: "the network's 28x28 input", model: "Model",
    step: "global_step", unknownStep: "global_step unknown", refused: "Cannot read it: {}", empty: "Draw a digit first.",
    offline: "The server is not answering: is mnist_app.py --serve still running?",
    unreadable: "The server's answer cannot be read (HTTP {}): is mnist_app.py --serve still running?",
    probability: "probability of", language: "Language",
  },
  zh: {
    title: "MNIST 手写板", hint: "写一个数字，或把一张数字照片拖到页面上。",
    keys: "键盘：选中手写板后，空格键落笔或抬笔，方向键移动笔（按住 Shift 小步移动）。",
    predict: "识别", undo: "撤销", clear: "清除", photo: "照片：", reads: "网络识别为",
    sees: "网络看到的输入：经过应用预处理后的 28x28 图像",
    board: "手写板", input: "网络的 28x28 输入", model: "模型",
    step: "训练步数 global_step", unknownStep: "训练步数未知", refused: "无法识别：{}", empty: "请先写一个数字。",
    offline: "服务器没有应答：mnist_app.py --serve 还在运行吗？",
    unreadable: "无法读取服务器的应答（HTTP {}）：mnist_app.py --serve 还在运行吗？",
    probability: "概率：", language: "语言",
  },
};
const LANGUAGE_KEY = "board.language";  // localStorage: the language picked with the switch
const BROWSER_LANGUAGE = (navigator.languages && navigator.languages[0] || navigator.language || "en").toLowerCase()
  .startsWith("zh") ? "zh" : "en";
let language = storedLanguage() || BROWSER_LANGUAGE;
let T = TEXT[language];
const FORMS = {zh: {checkpoint: "检查点 (checkpoint)", SavedModel: "SavedModel", LiteRT: "LiteRT (.tflite)"}};

const board = document.getElementById("board");
const pen = board.getContext("2d");
const inputView = document.getElementById("input");
const digitView = document.getElementById("digit");
const errorView = document.getElementById("error");
const bars = document.getElementById("bars");
const LINE_WIDTH = 18;  // of the board's 280 pixels: a marker's stroke, thinned or thickened by the preparation
const KEY_STEP = 10, KEY_SMALL_STEP = 3;

let strokes = [];        // each an array of [x, y] in the board's own pixels
let current = null;      // the stroke being drawn
let drawingPointer = null;  // pointerId of the pointer drawing `current` (null: the keyboard's pen, or none)
let keyPen = {x: 140, y: 140, down: false};
let asked = 0;           // requests sent; an answer to an older one is dropped
let message = null;      // [key of TEXT, detail] shown in #error, said again when the language changes
let model = null;        // /board/model's answer, for the model line
window.boardTimes = [];  // [stroke end, answer shown] in ms (performance.now), for bench/board.py

function storedLanguage() {
  try {
    const kept = localStorage.getItem(LANGUAGE_KEY);
    return TEXT.hasOwnProperty(kept) ? kept : null;
  } catch (e) {  // storage turned off: the browser's language
    return null;
  }
}

function chooseLanguage(chosen) {
  language = chosen;
  try { localStorage.setItem(LANGUAGE_KEY, chosen); } catch (e) { /* storage turned off: kept for this visit only */ }
  applyLanguage();
}

function applyLanguage() {
  T = TEXT[language];
  document.documentElement.lang = language === "zh" ? "zh-CN" : "en";
  document.title = T.title;
  for (const node of document.querySelectorAll("[data-text]")) node.textContent = T[node.dataset.text];
  for (const button of document.querySelectorAll("#lang [data-lang]")) {
    button.setAttribute("aria-pressed", String(button.dataset.lang === language));
  }
  document.getElementById("lang").setAttribute("aria-label", T.language);
  board.setAttribute("aria-label", T.board);
  inputView.setAttribute("aria-label", T.input);
  for (let d = 0; d < 10; d++) {
    document.querySelector(`#bar-${d} .bar`).setAttribute("aria-label", `${T.probability} ${d}`);
  }
  showModelLine();
  showMessage(message);
}

function showMessage(shown) {  // shown: [key of TEXT, detail for its {}], or null for none
  message = shown;
  errorView.textContent = shown ? T[shown[0]].replace("{}", () => shown[1]) : "";
}

function makeBars() {
  for (let d = 0; d < 10; d++) {
    const item = document.createElement("li");
    item.id = "bar-" + d;
    item.innerHTML = `<span>${d}</span><span class="bar" role="meter" aria-valuemin="0" aria-valuemax="1"
      aria-valuenow="0"><span class="fill"></span></span><span class="value"></span>`;
    bars.appendChild(item);
  }
}

function redraw() {
  pen.fillStyle = "#fff";
  pen.fillRect(0, 0, board.width, board.height);
  pen.strokeStyle = "#000";
  pen.fillStyle = "#000";
  pen.lineWidth = LINE_WIDTH;
  pen.lineCap = pen.lineJoin = "round";
  for (const stroke of current ? strokes.concat([current]) : strokes) {
    if (stroke.length === 1) {
      pen.beginPath();
      pen.arc(stroke[0][0], stroke[0][1], LINE_WIDTH / 2, 0, 2 * Math.PI);
      pen.fill();
      continue;
    }
    pen.beginPath();
    pen.moveTo(stroke[0][0], stroke[0][1]);
    for (const [x, y] of stroke.slice(1)) pen.lineTo(x, y);
    pen.stroke();
  }
  if (document.activeElement === board && !current) {  // the keyboard's pen, when the board has the focus
    pen.strokeStyle = "#2a6fdb";
    pen.lineWidth = 2;
    pen.beginPath();
    pen.arc(keyPen.x, keyPen.y, LINE_WIDTH / 2, 0, 2 * Math.PI);
    pen.stroke();
  }
}

function point(event) {
  const box = board.getBoundingClientRect();
  return [(event.clientX - box.left) * board.width / box.width, (event.clientY - box.top) * board.height / box.height];
}

function startStroke(at, pointerId = null) {
  current = [at];
  drawingPointer = pointerId;
  redraw();
}

function endStroke() {
  if (!current) return;
  strokes.push(current);
  current = null;
  drawingPointer = null;
  const ended = performance.now();
  redraw();
  predictDrawing(ended);
}

function resetAnswer() {
  asked++;
  digitView.textContent = "?";
  showMessage(null);
  showBars(null);
  inputView.getContext("2d").clearRect(0, 0, 28, 28);
}

function showBars(probabilities) {
  const top = probabilities ? probabilities.indexOf(Math.max(...probabilities)) : -1;
  for (let d = 0; d < 10; d++) {
    const item = document.getElementById("bar-" + d);
    const p = probabilities ? probabilities[d] : 0;
    item.classList.toggle("top", d === top);
    item.querySelector(".fill").style.width = (100 * p).toFixed(1) + "%";
    item.querySelector(".bar").setAttribute("aria-valuenow", p.toFixed(4));
    item.querySelector(".value").textContent = probabilities ? (100 * p).toFixed(1) + "%" : "";
  }
}

function showInput(pixels) {
  const context = inputView.getContext("2d");
  const image = context.createImageData(28, 28);
  pixels.forEach((v, i) => { image.data.set([v, v, v, 255], 4 * i); });
  context.putImageData(image, 0, 0);
}

async function ask(blob, name) {
  // The server's answer to a picture: {digit, probabilities, input}, {error} (its refusal), or {problem: [key of
  // TEXT, detail]} when there is no answer to read: then the page says so plainly, not the browser's exception.
  let response;
  try {
    response = await fetch("/board/predict", {method: "POST", body: blob,
      headers: {"Content-Type": blob.type || "application/octet-stream", "X-Filename": encodeURIComponent(name)}});
  } catch (e) {  // no answer at all: the server stopped, or the network is down
    return {problem: ["offline", ""]};
  }
  try {
    const answer = await response.json();
    if (typeof answer.error === "string" || (response.ok && Array.isArray(answer.probabilities))) return answer;
  } catch (e) { /* not JSON: a proxy's or another server's error page */ }
  return {problem: ["unreadable", String(response.status)]};
}

async function send(blob, name, ended) {
  const mine = ++asked;
  document.body.dataset.state = "busy";
  const answer = await ask(blob, name);
  if (mine !== asked) return;  // a newer stroke or a Clear came meanwhile
  document.body.dataset.state = "ready";
  if (answer.problem || answer.error !== undefined) {
    digitView.textContent = "?";
    showBars(null);
    inputView.getContext("2d").clearRect(0, 0, 28, 28);
    showMessage(answer.problem || ["refused", answer.error]);
  } else {
    showMessage(null);
    digitView.textContent = String(answer.digit);
    showBars(answer.probabilities);
    showInput(answer.input);
  }
  document.body.dataset.answers = String(Number(document.body.dataset.answers || 0) + 1);
  if (ended !== undefined) window.boardTimes.push([ended, performance.now()]);
}

function predictDrawing(ended) {
  if (!strokes.length) {
    resetAnswer();
    showMessage(["empty", ""]);
    return;
  }
  const keyPenShown = document.activeElement === board;
  if (keyPenShown) { board.blur(); redraw(); }  // the keyboard pen's circle is no ink
  board.toBlob(blob => send(blob, "drawing.png", ended), "image/png");
  if (keyPenShown) { board.focus({preventScroll: true}); redraw(); }
}

function sendPhoto(file) {
  strokes = [];
  current = drawingPointer = null;
  redraw();
  send(file, file.name || "photo");
}

// One pointer draws at a time: the first one down, until it lifts. A second finger on a phone is most often the
// hand holding it, a palm or the start of a pinch, not a second stroke of the digit; drawn, its ink would join the
// digit the network reads. Its events are ignored, so no line ever joins two fingers.
board.addEventListener("pointerdown", event => {
  if (event.button !== 0 || current) return;
  event.preventDefault();
  board.setPointerCapture(event.pointerId);
  startStroke(point(event), event.pointerId);
});
board.addEventListener("pointermove", event => {
  if (!current || event.pointerId !== drawingPointer) return;
  event.preventDefault();
  const coalesced = event.getCoalescedEvents ? event.getCoalescedEvents() : [];
  for (const e of coalesced.length ? coalesced : [event]) current.push(point(e));
  redraw();
});
for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) {
  board.addEventListener(type, event => { if (current && event.pointerId === drawingPointer) endStroke(); });
}
board.addEventListener("focus", redraw);
board.addEventListener("blur", () => { if (keyPen.down) { keyPen.down = false; endStroke(); } else redraw(); });

board.addEventListener("keydown", event => {
  const step = event.shiftKey ? KEY_SMALL_STEP : KEY_STEP;
  const moves = {ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step]};
  if (event.key === " " || event.key === "Enter") {
    event.preventDefault();
    keyPen.down = !keyPen.down;
    if (keyPen.down) startStroke([keyPen.x, keyPen.y]); else endStroke();
  } else if (moves[event.key]) {
    event.preventDefault();
    const [dx, dy] = moves[event.key];
    keyPen.x = Math.min(board.width, Math.max(0, keyPen.x + dx));
    keyPen.y = Math.min(board.height, Math.max(0, keyPen.y + dy));
    if (keyPen.down) current.push([keyPen.x, keyPen.y]);
    redraw();
  } else if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "z") {
    event.preventDefault();
    undo();
  } else if (event.key === "Escape" || event.key === "Delete") {
    event.preventDefault();
    clearBoard();
  }
});

function undo() {
  keyPen.down = false;
  current = drawingPointer = null;
  strokes.pop();
  redraw();
  if (strokes.length) predictDrawing(); else resetAnswer();
}

function clearBoard() {
  keyPen.down = false;
  current = drawingPointer = null;
  strokes = [];
  redraw();
  resetAnswer();
}

document.getElementById("lang").addEventListener("click", event => {
  const chosen = event.target.closest("[data-lang]");
  if (chosen) chooseLanguage(chosen.dataset.lang);
});
document.getElementById("clear").addEventListener("click", clearBoard);
document.getElementById("undo").addEventListener("click", undo);
document.getElementById("predict").addEventListener("click", () => predictDrawing());
document.getElementById("photo").addEventListener("change", event => {
  if (event.target.files.length) sendPhoto(event.target.files[0]);
  event.target.value = "";
});
document.addEventListener("dragover", event => { event.preventDefault(); board.classList.add("dragging"); });
document.addEventListener("dragleave", () => board.classList.remove("dragging"));
document.addEventListener("drop", event => {
  event.preventDefault();
  board.classList.remove("dragging");
  if (event.dataTransfer.files.length) sendPhoto(event.dataTransfer.files[0]);
});

function showModelLine() {
  if (!model) return;
  const form = (FORMS[language] || {})[model.form] || model.form;
  const step = model.global_step === null ? T.unknownStep : `${T.step} ${model.global_step}`;
  const line = document.getElementById("model");
  line.textContent = `${T.model}: ${model.network} · ${step} · ${form}`;
  line.title = model.source;
  line.dataset.network = model.network;
  line.dataset.form = model.form;
}

async function showModel() {
  let response;
  try {
    response = await fetch("/board/model");
  } catch (e) {
    showMessage(["offline", ""]);
    return;
  }
  try {
    model = await response.json();
  } catch (e) {
    showMessage(["unreadable", String(response.status)]);
    return;
  }
  showModelLine();
}

makeBars();
applyLanguage();
redraw();
showBars(null);
showModel();
document.body.dataset.state = "ready";
