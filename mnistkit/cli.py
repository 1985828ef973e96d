"""What every script's command line shares: its options, declared once (Option, Options) with their ranges
(within, span), its parser, its arguments when called from a notebook, and how it ends: one line on stderr and
an exit status (exit_status).

Building a parser imports no TensorFlow, so `--help` and flag errors are
instant.
"""
import argparse
import dataclasses
import difflib
import functools
import inspect
import itertools
import json
import math
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Mapping
from typing import Callable

from tqdm import tqdm

from .errors import STOP_SIGNALS, DataError, Interrupted, Stopped, off_a_hung_up_terminal

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where the course scripts are

# The keys a user presses, in the words of their own system.
STOP_KEYS = "Ctrl-C or Ctrl-Break" if os.name == "nt" else "Ctrl-C or SIGTERM"
END_OF_INPUT_KEY = "Ctrl-Z then Enter" if os.name == "nt" else "Ctrl-D"


@dataclasses.dataclass(frozen=True)
class Option:
    """One option of a script, declared once: its keyword (and --flag), default, help text and checks.

    name: the parsed arguments' attribute (a trainer's: backward()'s keyword
    and Settings' attribute); the flag is `--name-with-dashes` (flag_name).
    type: the flag's argparse type (default: the default's type); choices:
    allowed values. A number's range: minimum, the smallest allowed number,
    or above, a number the value must exceed (a learning rate above 0);
    maximum, the largest allowed number, or below, a number the value must
    stay under (a share below 1). A number option with a range must also be
    finite: NaN and infinity are refused (within). flag=False: a keyword of
    backward() only (log). resolve: turns the value given into the one
    Settings holds: a function of it, or a mapping from a flag's word to what it stands for (a value given
    as what a word stands for is kept). metavar: the value's name in --help; append: a
    repeatable flag whose value is the list of every value given
    (argparse's action="append"), None when none is; again: one whose
    value is its default until it is given, then the list of the values
    given (Again).
    constant: the name of the script's constant that gives the default
    ("BATCH_SIZE"), read from the script's module when its parser
    is built or backward() is called (Options.defaults), so that an edited
    constant takes effect; `default` is used when the module has no such
    constant.

    resume (a required keyword; None for an option of a script that trains
    nothing: ScriptOption): what a run resuming a model folder does
    when this option's value differs from the one the folder's record holds
    (every flag option's value is recorded: Options.record), one of
    RESUMES: "refuse" (the model would train on otherwise than it was
    trained: DataError naming the option, both values and what to give),
    "note" (one line saying so, then on with the new value) or "free"
    (nothing: the option does not change the model). why: for a refusing
    option, why(settings, recorded value, records per epoch, global_step)
    says what the other value would do (training.schedule_jump); else
    "would change how it trains".
    """
    name: str
    default: object
    help: str = ""
    type: Callable = None
    choices: tuple = None
    minimum: float = None
    above: float = None
    flag: bool = True
    resolve: object = None  # turns the given value into Settings': a function, or a mapping of words (records.PIPELINES)
    constant: str = None  # the script's constant holding the default (BATCH_SIZE for --batch-size)
    resume: str = dataclasses.field(kw_only=True)  # "refuse", "note" or "free": a resume at another value
    why: Callable = None  # a refusal's reason (see above)
    maximum: float = None
    below: float = None
    metavar: str = None
    append: bool = False
    again: bool = False  # a flag that may be given again: its one default, else the list of values given (Again)

    @property
    def flag_name(self):
        """The option's --flag: `--name-with-dashes`."""
        return "--" + self.name.replace("_", "-")

    def wanted(self, value):
        """What `value` should be when this option refuses it (">= 1", "from 0 to 255"; for a float, "a finite
        number > 0"), else "": within its bounds (above, else minimum; below, else maximum; see within). No bound,
        or no value (None: not given): always ""."""
        low, above = (self.above, True) if self.above is not None else (self.minimum, False)
        high, below = (self.below, True) if self.below is not None else (self.maximum, False)
        if (low is None and high is None) or value is None or within(value, low, high, above, below):
            return ""
        said = span(low, high, above, below)
        return f"a finite number {said}" if isinstance(value, float) else said


RESUMES = ("refuse", "note", "free")  # Option.resume's choices

# An Option of a script that trains nothing (mnist_app.py, mnist_learn.py, mnist_cluster.py, mnist_generateds.py):
# no model folder records its value, so it has no resume (None); a trainer's options must each say theirs.
ScriptOption = functools.partial(Option, resume=None)


class Options(tuple):
    """The options of a script (a tuple of Option): the one place its parser's flags come from; a trainer's
    backward() keywords and training.Settings too.

    A trainer binds them (bind, through its settings_for); another script adds
    them to its parser (add_to) and checks what was parsed (check). Another
    script's options join a parser under a prefix (prefixed).
    """

    def defaults(self, module):
        """{option name: default}: each option's constant (Option.constant) as the script's module `module`
        holds it now, else the option's own default."""
        return {o.name: getattr(module, o.constant, o.default) if o.constant else o.default for o in self}

    def add_to(self, parser, module):
        """Add each option's --flag to an argparse parser (or argument group), its default the one of `module`,
        the module of the script whose constants the options name (defaults())."""
        defaults = self.defaults(module)
        for o in self:
            if not o.flag:
                continue
            if isinstance(o.default, bool):
                parser.add_argument(o.flag_name, action="store_true", help=o.help)
            else:
                kind = o.type or (type(o.default) if o.default is not None else None)
                action = {"action": "append"} if o.append else {"action": Again} if o.again else {}
                parser.add_argument(o.flag_name, type=kind, choices=o.choices, default=defaults[o.name], help=o.help,
                                    metavar=o.metavar, **action)

    def check(self, args, module, error):
        """Check and resolve the values of these options' flags in `args`, an argparse Namespace, in place (bind:
        out of its bounds, NaN or infinite calls error(message), the parser's error: `--port must be from 0 to
        65535`, exit status 2); returns args. module: as for add_to."""
        values = self.bind((), {o.name: getattr(args, o.name) for o in self if o.flag}, module, error)
        vars(args).update((o.name, values[o.name]) for o in self if o.flag)
        return args

    def prefixed(self, prefix, *names):
        """The options called `names` (all when none), each renamed `<prefix>_<name>` (its flag `--<prefix>-<name>`),
        with their defaults, help and bounds: another script's options in a parser (add_to, check) beside its own.
        Raises ValueError for a name none of them has."""
        unknown = set(names) - {o.name for o in self}
        if unknown:
            raise ValueError(f"no option {', '.join(sorted(unknown))} among {', '.join(o.name for o in self)}")
        return Options(dataclasses.replace(o, name=f"{prefix}_{o.name}") for o in self if not names or o.name in names)

    def bind(self, args, kwargs, module, error=None):
        """{name: value} of every option, checked and resolved, for training.Settings.

        args, kwargs: a backward(*args, **kwargs) call's, or a parsed command
        line's flag values as kwargs; bound in the options' order as a
        function binds them (TypeError for an unknown keyword or one given
        twice). An option not given takes the default of `module`, the
        trainer script's module (defaults()). A value outside its option's
        bound (Option.wanted: below minimum, not above `above`, NaN or
        infinite) calls error(message) (argparse's parser.error, the message
        naming the flag: `--batch-size must be >= 1`), or without `error`
        raises ValueError naming the keyword; a value that is the module's
        constant (an edited `LEARNING_RATE_BASE = -1`) is named as the
        constant in its file instead. Each value but None is then resolved
        (Option.resolve: a --pipeline name to its records.Pipeline).
        """
        keywords = [inspect.Parameter(o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None) for o in self]
        defaults = self.defaults(module)
        values = {**defaults, **inspect.Signature(keywords).bind(*args, **kwargs).arguments}
        for o in self:
            value, wanted = values[o.name], o.wanted(values[o.name])
            if wanted:
                default = defaults[o.name]
                if o.constant and hasattr(module, o.constant) and (value is default or value == default):  # is: NaN
                    where = os.path.basename(getattr(module, "__file__", "") or "the trainer script")
                    keyword_message = flag_message = f"{o.constant} in {where} must be {wanted}, not {value!r}"
                else:
                    keyword_message = f"{o.name} must be {wanted}, not {value!r}"
                    flag_message = f"{o.flag_name} must be {wanted}"
                if error is None:
                    raise ValueError(keyword_message)
                error(flag_message)
            value = values[o.name]
            if isinstance(o.resolve, Mapping) and isinstance(value, str):  # a flag's word (a --pipeline name)
                values[o.name] = o.resolve[value]  # KeyError for another word
            elif callable(o.resolve) and value is not None:  # None: an option left unset stays so
                values[o.name] = o.resolve(value)
        return values

    def typed(self, parser, argv):
        """The names of the options whose --flag the command line `argv` typed (a set), as `parser` reads it
        (add_to's): typed at its default value too, and not when argparse filled in the default. A repeatable
        (append) option's default is None, which only a typed flag replaces with a list."""
        unset = object()
        defaults = {o.name: parser.get_default(o.name) for o in self if o.flag}
        parser.set_defaults(**{o.name: None if o.append else unset for o in self if o.flag})
        try:
            args = parser.parse_args(argv)
        finally:
            parser.set_defaults(**defaults)
        return {name for name in defaults if getattr(args, name) not in (unset, None)}

    def record(self, settings):
        """{name: value} of every flag option in `settings` (training.Settings), as a model folder's record holds
        them (JSON: a dataclass such as records.Pipeline or records.Mix as the dict of its fields): what the run
        trains with, compared with this run's on the next resume (changed)."""
        values = {o.name: getattr(settings, o.name) for o in self if o.flag}
        return {name: dataclasses.asdict(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v
                for name, v in values.items()}

    def changed(self, settings, record):
        """[(option, recorded value, value now)] for each option not "free" (Option.resume) whose value in
        `settings` differs from the one in `record`, a model folder's (folders.folder_record); refusing
        options first. An option the record lacks (a folder of an earlier version) is not compared."""
        now = self.record(settings)
        found = [(o, record[o.name], now[o.name]) for o in self
                 if o.flag and o.resume != "free" and o.name in record and record[o.name] != now[o.name]]
        return sorted(found, key=lambda f: f[0].resume != "refuse")


def new_parser(doc, epilog=None):
    """An argparse parser described by the first paragraph of a script's docstring, defaults shown.

    Every script builds its parser first, so this is also where its console
    is made safe for any file name: stdout and stderr escape what their
    encoding cannot print (\\u6570) instead of raising. A console or a
    redirected file on Windows encodes with its code page (cp1252, gbk;
    PYTHONIOENCODING too), which cannot print every file name: a message
    naming `数字七.jpg` would end the run with UnicodeEncodeError. With
    errors="backslashreplace" every message arrives, the unprintable
    characters as \\uXXXX escapes. Streams without reconfigure (a
    notebook's) are left as they are. epilog: text after the flags in --help.
    The parser's prog (its messages' `mnist_backward.py: error: ...`) is the
    script's own file name (script_name), not sys.argv[0]'s: main(argv)
    called in a notebook said `ipykernel_launcher.py: error: ...`.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) != "backslashreplace":
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream
                pass
    return ScriptParser(prog=script_name(doc), description=doc.split("\n\n")[0], epilog=epilog, allow_abbrev=False,
                        formatter_class=ShownDefaults)


def script_name(doc):
    """The file name (str, `mnist_backward.py`) of the script whose module docstring is `doc` (the very string:
    mnist_lenet5_backward.py passes its own to mnist_backward's parser), found among the modules loaded; None
    (argparse's sys.argv[0]) when no loaded module's is."""
    for module in list(sys.modules.values()):
        found = getattr(module, "__dict__", {})  # not getattr: a lazy module's __getattr__ would warn or import
        if found.get("__doc__") is doc and found.get("__file__"):
            return os.path.basename(found["__file__"])
    return None


def readable_json(value, encoding=None, **kwargs):
    """json.dumps(value, **kwargs) as a person reads it (str): names in their own letters, `"图片.png"`, not
    `"\\u56fe\\u7247.png"` (ensure_ascii=False), and still JSON wherever it goes.

    encoding: where the text goes (default: stdout's, as it is now; "utf-8" for a file or an HTTP answer). A
    character it cannot hold is written as its JSON escape instead (`\\u56fe` on an ASCII or cp1252 console,
    `\\ud83d\\ude00` for an emoji on a GBK one, `\\udcb7` for a byte of a file name that is not UTF-8, which no
    encoding holds), so the text encodes without UnicodeEncodeError and a JSON reader gets the names back. Only
    strings hold such characters, so an escape is always inside one. Use it for JSON a person reads (the app's
    --json, a model folder's record, a report); JSON only a program reads says ensure_ascii itself
    (tests/test_encodings.py checks every call says which).
    """
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    encoding = encoding or getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return text
    except LookupError:  # an encoding Python does not know: ASCII, which every reader takes
        return json.dumps(value, ensure_ascii=True, **kwargs)
    except UnicodeEncodeError:
        pass

    def held(char):
        try:
            char.encode(encoding)
            return char
        except UnicodeEncodeError:
            return json.dumps(char, ensure_ascii=True)[1:-1]  # \uXXXX, a surrogate pair beyond U+FFFF
    return "".join(map(held, text))


class ShownDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """--help's formatter: each flag's "(default: X)" where X is a value the flag takes, never "(default: None)" or
    "(default: False)" (a flag unset, a switch off: its help says what happens then), nor for flags after -- or a
    positional that takes none or many (issue 53's trial: `mnist_learn.py --help` showed "-- TRAINER_FLAG ...
    (default: None)")."""

    def _get_help_string(self, action):
        default = action.default
        unset = default is None or default is False or default == [] or default == () or default is argparse.SUPPRESS
        if unset or isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)) or \
                not action.option_strings and action.nargs in ("*", "?", argparse.REMAINDER):
            return action.help
        return super()._get_help_string(action)


class UnknownOption(str):
    """A mistyped option's usage error message (unknown_arguments); ScriptParser.error prints it, like any other,
    as one line."""


class ScriptParser(argparse.ArgumentParser):
    """argparse's parser, but every usage error is one line (error), and a mistyped option's names the closest
    option.

    `--step 10` for --steps: `mnist_backward.py: error: unknown option --step; did you mean --steps?`, exit
    status 2 (argparse's "unrecognized arguments" with the usage before it buried the hint-less line). The
    closest option is difflib's nearest of this parser's option strings and those of `also_known`'s parsers
    (mnist_cluster.py's launcher, whose unknown flags go to the workers' parser).
    """

    also_known = ()  # other parsers whose options a mistyped one may have meant

    def parse_args(self, args=None, namespace=None):
        args, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(unknown_arguments(extras, self, *self.also_known))
        return args

    def error(self, message):
        """Any usage error, argparse's own (`argument --steps: invalid int value: 'abc'`) or a check's
        (`--steps must be >= 0`): `PROG: error: MESSAGE`, one line on stderr, exit status 2, without argparse's
        usage block (16 lines for a trainer, which buried the line that says what is wrong)."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def unknown_arguments(extras, *parsers):
    """The one-line UnknownOption message for the arguments `extras` (str) no parser of `parsers` knows.

    The first that looks like an option (`--step`, `--step=10`) is named, with the closest option string of
    `parsers` when one is close enough (difflib, cutoff CLOSE, the dashes left out); the others are listed after
    it. Without an option among them, the stray words are named.
    """
    flags = [word.split("=", 1)[0] for word in extras if word.startswith("-") and len(word) > 1]
    if not flags:
        return UnknownOption(f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(extras)}; "
                             "--help lists what it takes")
    # Compared without their dashes, which every option shares: with them `--once` was close to the trainer's
    # --job_name and `--steps` to the evaluator's --help (ratio 0.62 each; 0.33 and 0.44 without)
    known = {name.lstrip("-"): name for parser in parsers for name in sorted(parser._option_string_actions)}
    close = [known[name] for name in difflib.get_close_matches(flags[0].lstrip("-"), sorted(known), n=1, cutoff=CLOSE)]
    message = f"unknown option {flags[0]}; " + (f"did you mean {close[0]}?" if close else "--help lists the options")
    return UnknownOption(message + (f" (also unknown: {', '.join(flags[1:])})" if flags[1:] else ""))


class Again(argparse.Action):
    """An argparse action for a flag that may be given again: the default (one value) while the flag is not given,
    then the list of the values given (argparse's "append" would keep the default in that list)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, (given if isinstance(given, list) else []) + [values])


def progress_bar(quiet=False, **kwargs):
    """A tqdm progress bar on stderr, or a silent stand-in with the same methods.

    The bar is drawn only when both stdout and stderr are terminals and
    `quiet` is false: redirected or CI output must hold no carriage returns
    or bar characters. kwargs go to tqdm (total, desc, unit, initial...).
    """
    terminal = sys.stdout.isatty() and sys.stderr.isatty()
    if terminal and not terminal_columns():  # a terminal that tells no size: tqdm's own size draws nothing
        size = shutil.get_terminal_size()  # $COLUMNS and $LINES, else 80x24; the last column left, as tqdm leaves it
        return tqdm(disable=quiet, file=sys.stderr, ncols=size.columns - 1, nrows=size.lines, **kwargs)
    return tqdm(disable=quiet or not terminal, file=sys.stderr, dynamic_ncols=True, **kwargs)


def terminal_columns():
    """The width stderr's terminal reports (int), 0 when it reports none: a pseudo-terminal made without a size
    (`script` or a container's exec without a terminal behind it, an IDE's run console, expect's `unbuffer`),
    where tqdm takes 0 columns and -1 rows and draws no bar, only an empty line."""
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):  # no file descriptor (a notebook's stream), or none of a terminal
        return 0


def path(text):
    """The argparse type of every path flag: str -> str, the path with a leading ~ expanded to the home folder.

    A shell expands `~` only at the start of a word, so `--model-dir=~/m`
    arrives as the literal `~/m`; expanded here, it names the folder the user
    meant, and messages print the expanded path. A path whose bytes are not
    UTF-8 (a folder unzipped from a Chinese Windows zip: its name in GBK;
    Python holds such bytes as surrogates) is one TensorFlow cannot open (its
    C++ takes UTF-8 strings only): it is given relative to the current folder
    when that is UTF-8 (run from inside it), else refused
    (argparse.ArgumentTypeError, a usage line naming it, read as GBK).
    """
    text = os.path.expanduser(text)
    if not_utf8(text) is None:
        return text
    relative = os.path.relpath(text) if os.path.isabs(text) else text
    if not_utf8(relative) is None:
        return relative
    raise argparse.ArgumentTypeError(not_utf8(text))


def plain_path(text):
    """The argparse type of a path only Python opens (pictures, label files, reports, the keep store): str -> str,
    a leading ~ expanded; any bytes (Python and Pillow open a GBK name as it is)."""
    return os.path.expanduser(text)


def not_utf8(path):
    """None when `path` (str) is UTF-8 text TensorFlow can open, else the one line saying it is not: the path as
    its bytes read in GBK (Chinese Windows' encoding), or with the bytes that are not UTF-8 escaped, and what to do."""
    try:
        path.encode("utf-8")
        return None
    except UnicodeEncodeError:
        pass
    raw = os.fsencode(path)
    try:
        shown = f"{raw.decode('utf-8', 'backslashreplace')} (read as GBK: {raw.decode('gbk')})"
    except UnicodeDecodeError:
        shown = raw.decode("utf-8", "backslashreplace")
    return (f"{shown}: a name in this path is not UTF-8, and TensorFlow opens UTF-8 paths only; rename it to UTF-8 "
            "(e.g. `convmv -f gbk -t utf-8 -r --notest FOLDER`), or cd into that folder and run from there")


def arguments(argv=None):
    """The arguments a main(argv) parses: argv, else the command line's, else none inside a notebook.

    A Jupyter kernel's sys.argv holds its own `-f kernel.json`, which is no
    argument of ours: a course function called from a notebook cell, e.g.
    `mnist_backward.main()`, runs with the defaults there.
    """
    if argv is not None:
        return list(argv)
    if "ipykernel" in sys.modules or "ipykernel" in sys.argv[0] or "IPython" in sys.modules:
        return []
    return sys.argv[1:]


def typed_path(answer):
    """The path a prompt's answer names, as a shell would read it: str -> str.

    A path dragged in from a file manager comes quoted and often with
    spaces after it ('my six.jpg' , "C:\\Users\\me\\my six.jpg"):
    surrounding whitespace is stripped, then one pair of matching
    surrounding quotes (single or double), and a leading ~ is expanded to
    the home folder (os.path.expanduser). Backslashes are kept (Windows).
    """
    path = answer.strip()
    if len(path) >= 2 and path[0] == path[-1] and path[0] in "'\"":
        path = path[1:-1]
    return os.path.expanduser(path)


def script_path(script, cwd=None):
    """A course script's path as the user can type it from the current folder: str.

    script: its file name ("mnist_generateds.py"), found by script_file
    (a network added beside the course may have its trainer in a folder of
    its own, on PYTHONPATH). The bare name when the script
    is in the current folder, the relative path when it is below it, else
    the absolute path: a hint that names a script must run where the user
    is, also when they started this one from another folder (`python
    ~/course/mnist_backward.py`). Quoted for the shell when the path holds
    spaces or other special characters.
    """
    target = script_file(script)
    try:
        relative = os.path.relpath(target, cwd or os.getcwd())
    except ValueError:  # Windows: another drive
        relative = target
    return quoted(target if relative.startswith(os.pardir) or os.path.isabs(relative) else relative)


def script_file(script):
    """A course script's absolute path: in the course's folder, else in the first folder on sys.path holding it."""
    target = os.path.join(REPO_DIR, script)
    if os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, script)):
        return target  # a course script (REPO_DIR is where they are)
    return next((os.path.join(os.path.abspath(folder), script) for folder in sys.path
                 if os.path.isfile(os.path.join(folder or ".", script))), target)


def quoted(word):
    """One word of a command line as the user's shell reads it: quoted when it holds spaces or special characters."""
    if os.name == "nt":
        return f'"{word}"' if any(c.isspace() for c in word) else word
    return shlex.quote(word)


def command(script, *args):
    """The command line `python SCRIPT ARGS` that runs a course script from the current folder (see script_path).

    Each of args is quoted for the shell (quoted), so a hint that keeps the
    user's `--model-dir 'model[1]'` runs as written.
    """
    return " ".join(["python", script_path(script), *map(quoted, args)])


def in_words(names):
    """names (a non-empty list of str) as a line lists them: `a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def kept(flag, value, default):
    """[flag, value] when the user gave value other than the flag's default (the same folder spelled
    otherwise counts as the default), else []: a hint's command keeps the user's own flags."""
    if value is None or os.path.normpath(value) == os.path.normpath(default):
        return []
    return [flag, value]


def within(value, low, high=None, above=False, below=False):
    """True when the number `value` is finite (not NaN, not infinite) and from `low` (above: more than `low`; None:
    no lower end) up to `high` (below: less than `high`; None: no upper end). The one range check of bounded's
    flags and Option.wanted's options."""
    return (math.isfinite(value) and (low is None or (value > low if above else value >= low))
            and (high is None or (value < high if below else value <= high)))


def span(low, high=None, above=False, below=False):
    """The range `within` accepts, as a message says it: "> 0", ">= 1", "from 0 to 255", "between 0 and 1"
    (neither end), "< 1"."""
    if low is not None and high is not None and above == below:
        return f"between {low:g} and {high:g}" if above else f"from {low:g} to {high:g}"
    lower = "" if low is None else f"> {low:g}" if above else f">= {low:g}"
    upper = "" if high is None else f"< {high:g}" if below else f"<= {high:g}"
    return " and ".join(part for part in (lower, upper) if part)


def bounded(kind, low, high=None, above=False):
    """An argparse type: the flag's text as `kind` (int or float), finite, from `low` (above: more than `low`)
    up to `high` (None: no upper end).

    Raises argparse.ArgumentTypeError, which argparse prints as a usage error
    naming the flag (`argument --interval: -1 is out of range: give a number
    > 0`), exit status 2.
    """
    noun = "a whole number" if kind is int else "a number"

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
        if not within(value, low, high, above):
            raise argparse.ArgumentTypeError(f"{text} is out of range: give {noun} {span(low, high, above)}")
        return value
    parse.__name__ = kind.__name__
    return parse


def whole_number(answer, what):
    """A prompt's answer as an int >= 0; raises ValueError naming `what` for anything else ("two", "-1", "", "2.0").

    A negative whole number is told what is wanted (`must be 0 or more`), not that it is no whole number.
    """
    answer = answer.strip()
    if answer[:1] == "-" and answer[1:].isdecimal():
        raise ValueError(f"{what} must be 0 or more, not {answer!r}")
    if not answer.isdecimal():  # int() reads every decimal digit; isdigit() would also pass "²"
        raise ValueError(f"{what} must be a whole number, not {answer!r}")
    return int(answer)


def ask_whole_number(prompt, what):
    """Ask `prompt` until the answer is a whole number (int >= 0); None at end of input (Ctrl-D) before any answer.

    A wrong answer prints `error: <what> must be a whole number, not '<answer>'`
    (`must be 0 or more` for a negative one) on stderr and asks again. An input that ends after a wrong answer
    (`two`, then Ctrl-D; a piped answer the script refused) raises DataError (`end of input after the refused
    answer 'two': <what> was never given`), so that the process exits non-zero. Ctrl-C ends the prompt's line,
    then raises KeyboardInterrupt as usual.
    """
    refused = None  # the last answer refused, as typed
    while True:
        try:
            answer = input(prompt)
            return whole_number(answer, what)
        except EOFError:
            if refused is None:
                return None
            print(flush=True)  # end the prompt's line before the error's
            raise DataError(f"end of input after the refused answer {refused!r}: {what} was never given") from None
        except KeyboardInterrupt:
            print(flush=True)  # end the prompt's line before the stop is reported
            raise
        except ValueError as e:
            refused = answer.strip()
            print(f"error: {e}", file=sys.stderr, flush=True)


def _raise_stopped(signum, frame):
    off_a_hung_up_terminal(signum)
    raise Stopped(signum)


def _hold_stops():
    """Ignore the stop signals (STOP_SIGNALS) from here on, until exit_status puts its caller's handlers back: the
    process is stopping, and a second signal (the terminal's SIGINT, then a parent's SIGTERM to its group) while
    the stop's line is printed would end it in a traceback instead of that line."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


BROKEN_PIPE_STATUS = 128 + 13  # what a shell reports for a process ended by SIGPIPE


def exit_status(work, errors=(DataError,), interrupted="stopped"):
    """Run work() and map its end to the process's exit status, printing one line for a failure.

    0 when it returns; 1 with `error: <message>` on stderr for one of
    `errors`; 128 + signal number when stopped by SIGINT or SIGTERM:
    Interrupted prints its own message, a signal that came first prints
    `<SIGNAL>: <interrupted>`. While work() runs, Ctrl-C raises
    KeyboardInterrupt even where a shell started the process in the
    background (`&` hands SIGINT down as ignored), and SIGTERM raises
    Stopped, so that `finally` blocks remove what was half-written.
    Output into a pipe whose reader has gone (`| head -1`) ends quietly
    with BROKEN_PIPE_STATUS. Once stopped, further stop signals are ignored
    while the line is printed (_hold_stops).
    """
    previous = {signum: signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else _raise_stopped)
                for signum in STOP_SIGNALS}
    started = sys.modules.get("mnistkit.startup")
    if started is not None:  # a stop after the work, under startup's handler again, no longer says `nothing saved`
        started.WORK_BEGAN = True
    try:
        work()
    except errors as e:
        return refused(e)
    except Interrupted as e:
        _hold_stops()
        print(f"{own_line()}{e}", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt as e:
        _hold_stops()
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"{own_line()}{signal.Signals(signum).name}: {interrupted}", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        silence_stdout()
        return BROKEN_PIPE_STATUS
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def refused(message):
    """Say `message` (a DataError, or str) as bad input is said, `error: <message>` on stderr, and return the exit
    status of bad input (1).

    Exit status 2 (argparse's parser.error, with the script's name before `error:`) is for a command line that is
    wrong as typed: an unknown or mistyped flag, a value out of its range, flags that do not go together. A file or
    folder a flag names that is not there, or holds the wrong thing (`--model-dir modle` by model/, `model/history`),
    is bad input, as a picture not there is: this line and 1, in every script (README, "Exit statuses").
    """
    print(f"error: {message}", file=sys.stderr)
    return 1


def own_line():
    """"\n" when stderr is a terminal, else "": a stop's line then starts on a line of its own, not after the `^C`
    the terminal echoed, and a log gets no blank line (the rule of tf_compat.own_line, which this module does not
    import: tf_compat run as a script imports this one)."""
    try:
        return "\n" if sys.stderr.isatty() else ""
    except (AttributeError, ValueError):
        return ""


def silence_stdout():
    """Point stdout at the null device, so that Python's flush at exit finds no closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


CLOSE = 0.6  # difflib's ratio from which an option's name is close to another (its get_close_matches' default cutoff)


def slips(one, other):
    """How many slips of the keys turn the str `one` into `other` (int): a letter changed, added or dropped, or two
    beside each other swapped (the optimal string alignment distance: Damerau-Levenshtein without repeated edits
    of a span)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(other) + 1)] for i in range(len(one) + 1)]
    for i in range(1, len(one) + 1):
        for j in range(1, len(other) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (one[i - 1] != other[j - 1]))
            if i > 1 and j > 1 and one[i - 1] == other[j - 2] and one[i - 2] == other[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(one)][len(other)]


def mistyped_for(typed, name):
    """True when a person would call the file or folder name `typed` (str) a typo of `name`, which is there: the
    one rule of every `did you mean` for a path (close_paths).

    Both with an extension, and not the same one (case aside): the same stem and the extensions one slip apart
    (`mnist.tfilte` for mnist.tflite), never another kind of file (`sevne.jpg` is offered seven.jpg, not
    sevens.txt). Else their stems (an extension on one side only is left out: `export/mnst` for export/mnist and
    export/mnist.tflite) at most one slip apart per 4 letters of the longer, and at least one allowed (`modle`,
    `dta`, `pic` for pics, `my_digts`), case aside: `nothere.png` is no typo of three.png (3 slips in 7 letters).
    Names of one or two letters differ by case alone: `M` beside `D` (a new folder named for itself) is no typo.
    """
    (typed_stem, typed_ext), (stem_of, ext) = (os.path.splitext(n.lower()) for n in (typed, name))
    typed_stem, stem_of = typed_stem or typed_ext, stem_of or ext  # `.hidden`: all stem
    if typed_ext and ext and typed_ext != ext and typed_stem != typed_ext and stem_of != ext:
        return typed_stem == stem_of and slips(typed_ext, ext) <= 1
    longer = max(len(typed_stem), len(stem_of))
    return slips(typed_stem, stem_of) <= (max(1, longer // 4) if longer >= 3 else 0)


def close_paths(path, wanted=os.path.isdir):
    """The paths close to `path` (str) for which wanted(path) is true (default: a folder), at most 3, the closest
    first: what a typo may have meant, in the spelling the user gave, `path`'s folders as typed.

    The names beside `path` (in its folder) that its name is a typo of (mistyped_for: `modle`, `dta`,
    `sevne.png`, not `nothere.png` for three.png), the closest first (difflib's ratio of the names without their
    extension, then of the whole names). When a folder on the way is not there (`pic/1.png` for pics/1.png,
    `图片/3.png` for 图片集/3.png), the folders close to it take its place (the closest first), each followed by
    the rest of the path, itself found the same way when not wanted as it is (`pic/sevne.png` for
    pics/seven.png). Nothing when a folder cannot be listed."""
    parent = os.path.dirname(os.path.normpath(path))
    typed = os.path.basename(os.path.normpath(path))
    if parent and not os.path.isdir(parent):  # a mistyped folder on the way: its close folders in its place
        found = []
        for folder in close_paths(parent):
            meant = os.path.join(folder, typed)
            found += [meant] if wanted(meant) else close_paths(meant, wanted)
        return list(dict.fromkeys(found))[:3]
    try:
        beside = os.listdir(parent or ".")
    except OSError:
        return []

    def ratio(one, other):
        return difflib.SequenceMatcher(None, one, other).ratio()
    scored = sorted(((ratio(stem(typed), stem(name)), ratio(typed, name), name) for name in beside), reverse=True)
    close = (os.path.join(parent, name) for _, _, name in scored if mistyped_for(typed, name))
    return list(itertools.islice(filter(wanted, close), 3))  # wanted asked of close names only: it may list a folder


def stem(name):
    """A file name without its extension (`seven` of seven.png); a folder's name, or `.hidden`, as it is."""
    return os.path.splitext(name)[0] or name


def did_you_mean(path, wanted=os.path.isdir, close=None):
    """The hint of every one-line error for a path that is not there (a picture, a --model-dir, a --data-dir):
    `did you mean model?` (str) naming the paths close to `path` for which wanted(path) is true (close_paths: the
    names beside it, or with a mistyped folder on the way the close folders in its place: `did you mean
    pics/1.png?` for pic/1.png), `did you mean a.png or b.png?` for several; "" when none is. close: those
    paths, when the caller has chosen them already (a trainer's typo_of). Lists one folder: no TensorFlow, so the
    line comes before a script imports it."""
    close = close_paths(path, wanted) if close is None else close
    return f"did you mean {' or '.join(close)}?" if close else ""
