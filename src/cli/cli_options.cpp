// Boost.Program_options description of every flag, and its translation into sort_options.
#include "cli/cli_options.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory_limit.hpp"
#include "core/parse_size.hpp"
#include "gpusort/error.hpp"
#include "gpusort/record_format.hpp"

namespace po = boost::program_options;

namespace gpusort::cli {
namespace {

constexpr const char* usage_line =
    "Usage: gpusort [OPTION]... [INPUT]... [OUTPUT]\n"
    "Sort binary files of fixed-size records by a key field, on the GPU when there\n"
    "is one.\n"
    "\n"
    "With -o, every operand is an input. Without it, two operands are INPUT OUTPUT,\n"
    "one is INPUT (output to stdout), none reads stdin. '-' names stdin or stdout.\n"
    "Several inputs are concatenated. The output is replaced atomically; it may be\n"
    "one of the inputs. It keeps its mode and owner; links are followed; devices and\n"
    "FIFOs are written into, not replaced.\n"
    "\n"
    "NumPy .npy inputs (1-D arrays) are recognised by their header, which gives the\n"
    "record format; the output is then an .npy file with the same header.\n";

constexpr const char* examples =
    "\nExamples:\n"
    "  gpusort keys.bin sorted.bin                8-byte unsigned keys (the default)\n"
    "  gpusort -t f64 -r data.bin -o sorted.bin   doubles, largest first\n"
    "  gpusort -t i32 --record-size 16 --key-offset 4 recs.bin out.bin\n"
    "  gpusort --format gensort part-*.bin -o all.bin\n"
    "  producer | gpusort -t u32 - - | consumer\n"
    "  gpusort -S 4G -T /scratch big.bin big.bin  in place, within 4 GiB of memory\n"
    "  gpusort -c -t u32 keys.bin && echo sorted  check only\n"
    "  gpusort -m -u day-*.bin -o all.bin         merge sorted files, no equal keys\n"
    "  gpusort --key time events.npy sorted.npy   rows of a NumPy structured array\n"
    "\nExit status: 0 on success (with -c/-C: sorted), 1 when -c/-C finds disorder,\n"
    "2 on trouble (the message names the file and the cause).\n"
    "Options may be repeated; the last one counts.\n";

/// --help fits an 80-column terminal.
constexpr unsigned help_columns = 79;

/// One titled group of options in --help (Boost keeps a group's caption to itself).
struct option_group {
  const char* caption;
  po::options_description options;
};

/// The options by group, in --help order.
std::vector<option_group> option_groups() {
  po::options_description format_opts;
  format_opts.add_options()
      ("type,t", po::value<std::string>()->value_name("TYPE"),
       "key type: u32 u64 i32 i64 f32 f64 (little-endian; floats in IEEE totalOrder) or "
       "bytes:N (unsigned byte string); default u64")
      ("record-size", po::value<std::string>()->value_name("BYTES"),
       "bytes per record, up to 1 GiB (default: the key size)")
      ("key-offset", po::value<std::string>()->value_name("BYTES"),
       "offset of the key inside each record (default 0)")
      ("format", po::value<std::string>()->value_name("NAME"),
       "preset: u32 u64 i32 i64 f32 f64 (key-only), kv64 (u64 key + u64 value), gensort "
       "(100-byte records, 10-byte key); -t/--record-size/--key-offset refine it")
      ("key", po::value<std::string>()->value_name("NAME"),
       ".npy inputs of a structured dtype: the field that holds the key (the record is the "
       "row); the header gives the rest, and -t/--record-size/--key-offset, when given, "
       "must agree with it");

  po::options_description order_opts;
  order_opts.add_options()
      ("reverse,r", po::bool_switch(), "largest key first")
      ("stable,s", po::bool_switch(),
       "keep records with equal keys in input order (gpusort always does; accepted for "
       "GNU sort compatibility)")
      ("unique,u", po::bool_switch(),
       "write only the first record (in input order) of each run of equal keys; with -c, "
       "equal neighbours are disorder");

  po::options_description mode_opts;
  mode_opts.add_options()
      (",c", po::bool_switch(),
       "check whether the input is sorted, write nothing: exit 1 and name the first record "
       "out of order if it is not")
      (",C", po::bool_switch(), "like -c, but say nothing: the exit status tells")
      ("check", po::value<std::string>()->implicit_value("diagnose-first")->value_name("HOW"),
       "-c (diagnose-first, the default) or -C (quiet, silent)")
      ("merge,m", po::bool_switch(),
       "merge inputs that are each sorted already, without sorting; every input is checked "
       "first, and an unsorted one fails the merge before anything is written");

  po::options_description resource_opts;
  resource_opts.add_options()
      ("buffer-size,S", po::value<std::string>()->value_name("SIZE"),
       "host memory budget, e.g. 512M, 8G or 50% (of the usable memory: the RAM, or a "
       "cgroup's memory limit where smaller; the default is 50%; at least 4M, at most the "
       "usable memory); beside it each thread of the host merge keeps up to 4.5 MiB of "
       "buffers, and mapped files take page cache")
      ("temporary-directory,T", po::value<std::string>()->value_name("DIR"),
       "directory for runs spilled to disk (default $TMPDIR or /tmp), striped across up to "
       "eight files written in parallel")
      ("parallel", po::value<std::string>()->value_name("N"),
       "use at most N threads for CPU work (default, and at most: the CPUs available); "
       "a pipe input is read with up to N/2 helper threads (at most 8), below N = 4 by one "
       "thread")
      ("devices", po::value<std::string>()->value_name("LIST"),
       "GPUs to use: auto (default: every GPU present, the CPU when there is none or the "
       "input is small, see --algorithm), all "
       "(every GPU present; an error without one), none (CPU only), or device ids, "
       "comma-separated, such as 0,1; a file of more than one chunk is shared among them: "
       "records that are their own key and that the GPUs hold together are partitioned "
       "across them by key and sorted where they land (no merge), else they form its runs "
       "at once, taking the chunks (and the key ranges of runs sorted again on the GPUs) "
       "from one queue; one chunk or a stream goes to the first, and the others are not "
       "opened")
      ("algorithm", po::value<std::string>()->value_name("NAME"),
       "run sorter: auto (default: the CPU for files of up to 56 MiB and 10 Mi records per "
       "CPU, moved by the spread of sampled keys, else the GPU "
       "when present, there the faster of hrs and onesweep by chunk size and sampled key "
       "skew where equal keys cannot be told apart, else onesweep; several GPUs sorting by "
       "exchange sort their key ranges with hrs for evenly spread keys and for few distinct "
       "keys), hrs "
       "(hybrid radix sort on the GPU; equal keys of records with a payload in no particular "
       "order), onesweep (CUB on the GPU), cpu (host radix sort)")
      ("gpu-memory", po::value<std::string>()->value_name("SIZE"),
       "device memory budget of each GPU, e.g. 4G (default: most of its free memory)")
      ("merge-on", po::value<std::string>()->value_name("WHERE"),
       "where runs of several GPU chunks become the output: auto (default: a file whose runs "
       "would spill past -S forms none: its keys are counted into key ranges of one chunk, "
       "its sorted chunks scattered into their places in the output and each range sorted "
       "there again on the GPU; else gpu where it applies, the runs fit -S, the output stays "
       "within the kernel's dirty-page limit and the runs are more than the host's vector "
       "merge takes sooner), gpu (cut into key ranges, each sorted again on the GPU; records "
       "with a 4- or 8-byte numeric key and at most 8 bytes of payload; runs past -S are read "
       "back through mappings of the page cache), host (TBB multiway merge; into an output "
       "mapped whole it gives the runs' memory back as it goes)")
      ("direct-io", po::value<std::string>()->implicit_value("always")->value_name("WHEN"),
       "read the input, write the output and spill runs with O_DIRECT, past the page "
       "cache: auto (default: where the data is larger than the memory left to the page "
       "cache beside the budget), always (--direct-io alone), never");

  po::options_description output_opts;
  output_opts.add_options()
      ("output,o", po::value<std::string>()->value_name("FILE"),
       "write the result to FILE instead of the last operand")
      ("fsync", po::bool_switch(), "fsync the output before renaming it into place")
      ("stats", po::value<std::string>()->implicit_value("text")->value_name("json"),
       "print the strategy and per-stage times, bytes and rates on stderr (--stats=json for JSON)")
      ("trace", po::value<std::string>()->value_name("FILE"),
       "write a Chrome trace-event JSON of every stage to FILE (open it in Perfetto); it is "
       "written before the output is committed")
      ("verbose,v", po::bool_switch(),
       "print the plan (strategy, device, budget, runs, output) and why, on stderr")
      ("progress", po::bool_switch(),
       "show how far the current stage has come on stderr: a bar with bytes, rate and ETA "
       "redrawn on a terminal, a plain line every 5 s otherwise")
      ("no-fork", po::bool_switch(),
       "exit only once everything the sort held is given back (for a debugger or profiler); "
       "by default a child process sorts and gpusort exits as soon as the output is in "
       "place, leaving the child to unmap the output and free the runs' memory (0.5-1.3 s "
       "for 16-32 GiB)")
      ("help,h", po::bool_switch(), "show this help and exit")
      ("version", po::bool_switch(), "show the version and exit");

  return {{"Record format", format_opts},
          {"Ordering", order_opts},
          {"Other modes", mode_opts},
          {"Resources", resource_opts},
          {"Output and reporting", output_opts}};
}

po::options_description visible_options() {
  po::options_description all;
  for (const option_group& group : option_groups()) all.add(group.options);
  return all;
}

/// A non-negative decimal count in [min, max]: Boost would read "-1" as 4294967295.
std::uint64_t parse_count(const std::string& text, const char* option, std::uint64_t min,
                          std::uint64_t max) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  GPUSORT_EXPECTS(!text.empty() && ec != std::errc::invalid_argument && ptr == end &&
                      std::isdigit(static_cast<unsigned char>(text[0])),
                  std::string("invalid ") + option + " '" + text + "' (expected a number)");
  GPUSORT_EXPECTS(ec != std::errc::result_out_of_range && value >= min && value <= max,
                  std::string("invalid ") + option + " '" + text + "' (expected " +
                      std::to_string(min) + " to " + std::to_string(max) + ")");
  return value;
}

device_selection parse_devices(const std::string& text) {
  device_selection sel;
  if (text == "auto") return sel;
  if (text == "all") {
    sel.how = device_selection::mode::all;
    return sel;
  }
  if (text == "none") {
    sel.how = device_selection::mode::none;
    return sel;
  }
  sel.how = device_selection::mode::list;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int id = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    GPUSORT_EXPECTS(ec == std::errc{} && end == item.data() + item.size(),
                    "invalid --devices '" + text + "' (expected all, auto, none or device ids "
                    "such as 0,1)");
    GPUSORT_EXPECTS(id >= 0, "invalid --devices '" + text + "': device " + item +
                                 " is negative (device ids count from 0)");
    GPUSORT_EXPECTS(std::find(sel.ids.begin(), sel.ids.end(), id) == sel.ids.end(),
                    "invalid --devices '" + text + "': device " + item + " is listed twice");
    sel.ids.push_back(id);
  }
  // getline drops a trailing empty field: "0," must not pass as "0".
  GPUSORT_EXPECTS(!sel.ids.empty() && text.back() != ',',
                  "invalid --devices '" + text + "' (expected all, auto, none or device ids "
                  "such as 0,1)");
  return sel;
}

algorithm parse_algorithm(const std::string& text) {
  if (text == "auto") return algorithm::automatic;
  if (text == "onesweep") return algorithm::onesweep;
  if (text == "hrs") return algorithm::hrs;
  if (text == "cpu") return algorithm::cpu;
  throw_error("unknown --algorithm '" + text + "' (expected auto, hrs, onesweep or cpu)");
}

merge_location parse_merge_location(const std::string& text) {
  if (text == "auto") return merge_location::automatic;
  if (text == "gpu") return merge_location::gpu;
  if (text == "host") return merge_location::host;
  throw_error("unknown --merge-on '" + text + "' (expected auto, gpu or host)");
}

direct_io parse_direct_io(const std::string& text) {
  if (text == "auto") return direct_io::automatic;
  if (text == "always") return direct_io::always;
  if (text == "never") return direct_io::never;
  throw_error("unknown --direct-io '" + text + "' (expected auto, always or never)");
}

}  // namespace

namespace {

/// "-t, --type TYPE", "--check[=HOW]", "-C": the spelling GNU tools use, not Boost's
/// "-t [ --type ] TYPE".
std::string option_synopsis(const po::option_description& d) {
  const std::string long_name = d.long_name();
  const std::string short_name =
      d.canonical_display_name(po::command_line_style::allow_dash_for_short);
  std::string s = "  ";
  if (short_name.size() == 2 && short_name[0] == '-') s += short_name;
  if (!long_name.empty()) s += (s.size() > 2 ? ", --" : "    --") + long_name;
  const auto& value = d.semantic();
  if (value->max_tokens() > 0) {
    std::string name = value->name();  // "TYPE", or "[=HOW(=diagnose-first)]" when implicit
    if (const auto open = name.find("(="); open != std::string::npos)
      name.erase(open, name.find(')', open) - open + 1);
    if (name.empty() || name[0] != '[') name = " " + name;
    s += name;
  }
  return s;
}

/// `text` wrapped at help_columns, every line after the first indented by `indent`.
std::string wrap(const std::string& text, std::size_t first_column, std::size_t indent) {
  std::string out;
  std::size_t column = first_column;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (column > indent && column + 1 + word.size() > help_columns) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

}  // namespace

std::string help_text() {
  constexpr std::size_t description_column = 30;
  std::string text = usage_line;
  for (const option_group& group : option_groups()) {
    text += "\n" + std::string(group.caption) + ":\n";
    for (const auto& option : group.options.options()) {
      std::string line = option_synopsis(*option);
      if (line.size() + 2 > description_column) {
        text += line + "\n";
        line = std::string(description_column, ' ');
      } else {
        line.resize(description_column, ' ');
      }
      text += line + wrap(option->description(), description_column, description_column) + "\n";
    }
  }
  return text + examples;
}

namespace {

/// e.what(), unless that would hang: Boost.Program_options (1.74) fills its messages in by
/// replacing "%option%", "%value%", ... with the user's tokens until none is left, so a token
/// that holds such a placeholder makes what() loop forever (found by fuzz_command_line). Those
/// tokens are fine in a command line that parses (a file named "a%value%.bin"); only the
/// message of one that fails is built without them.
std::string boost_error_message(const po::error& e, const std::vector<std::string>& args) {
  static constexpr std::string_view placeholders[] = {
      "%option%", "%canonical_option%", "%original_token%", "%value%", "%prefix%"};
  for (const std::string& a : args)
    for (const std::string_view p : placeholders)
      if (a.find(p) != std::string::npos) {
        const auto* named = dynamic_cast<const po::error_with_option_name*>(&e);
        const std::string option = named != nullptr ? named->get_option_name() : "";
        return "invalid command line" + (option.empty() ? "" : " at option " + option) +
               " (an argument holds '" + std::string(p) + "')";
      }
  return e.what();
}

}  // namespace

request parse_command_line(int argc, const char* const* argv) {
  po::options_description all = visible_options();
  po::options_description hidden;
  hidden.add_options()("operand", po::value<std::vector<std::string>>());
  all.add(hidden);
  po::positional_options_description positional;
  positional.add("operand", -1);

  // --stats, --check and --direct-io take an optional value; Boost would swallow the next
  // operand as that value ("--stats in.bin out.bin"), so a bare one is spelled out first.
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::string& a : args) {
    if (a == "--") break;
    if (a == "--stats") a = "--stats=text";
    if (a == "--check") a = "--check=diagnose-first";
    if (a == "--direct-io") a = "--direct-io=always";
  }

  po::variables_map vm;
  try {
    po::parsed_options parsed = po::command_line_parser(args)
                                    .options(all)
                                    .positional(positional)
                                    .style(po::command_line_style::unix_style)
                                    .run();
    // GNU sort takes a repeated option (`-r -r`, `-S 1G -S 2G`) and the last one counts;
    // Boost rejects repeats, so keep only the last of each.
    std::map<std::string, std::size_t> last;
    for (std::size_t i = 0; i < parsed.options.size(); ++i)
      if (parsed.options[i].position_key < 0) last[parsed.options[i].string_key] = i;
    std::vector<po::option> kept;
    for (std::size_t i = 0; i < parsed.options.size(); ++i) {
      const po::option& opt = parsed.options[i];
      if (opt.position_key >= 0 || last[opt.string_key] == i) kept.push_back(opt);
    }
    parsed.options = std::move(kept);
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw_error(boost_error_message(e, args));
  }

  request req;
  req.help = vm["help"].as<bool>();
  req.version = vm["version"].as<bool>();
  if (req.help || req.version) return req;

  sort_options& o = req.options;
  if (vm.count("format")) o.format = format_preset(vm["format"].as<std::string>());
  if (vm.count("type")) set_key_type(o.format, vm["type"].as<std::string>());
  if (vm.count("record-size"))
    o.format.record_size = static_cast<std::uint32_t>(
        parse_count(vm["record-size"].as<std::string>(), "--record-size", 1, max_record_size));
  if (vm.count("key-offset"))
    o.format.key_offset = static_cast<std::uint32_t>(parse_count(
        vm["key-offset"].as<std::string>(), "--key-offset", 0, max_record_size - 1));
  o.format.validate();
  // .npy inputs take their format from their header; what was said here must agree with it.
  if (vm.count("key")) o.npy.key_field = vm["key"].as<std::string>();
  o.npy.type_set = vm.count("type") > 0 || vm.count("format") > 0;
  o.npy.record_size_set = vm.count("record-size") > 0 || vm.count("format") > 0;
  o.npy.key_offset_set = vm.count("key-offset") > 0 || vm.count("format") > 0;
  o.descending = vm["reverse"].as<bool>();
  o.stable = vm["stable"].as<bool>();
  o.unique = vm["unique"].as<bool>();
  o.merge_only = vm["merge"].as<bool>();
  if (vm["-c"].as<bool>()) req.check = check_mode::diagnose;
  if (vm["-C"].as<bool>()) req.check = check_mode::quiet;
  if (vm.count("check")) {
    const std::string how = vm["check"].as<std::string>();
    if (how == "diagnose-first") req.check = check_mode::diagnose;
    else if (how == "quiet" || how == "silent") req.check = check_mode::quiet;
    else throw_error("invalid --check=" + how + " (expected diagnose-first, quiet or silent)");
  }
  GPUSORT_EXPECTS(req.check == check_mode::none || !o.merge_only,
                  "-c/--check and -m/--merge are incompatible");
  if (vm.count("buffer-size"))
    o.buffer_bytes = parse_size(vm["buffer-size"].as<std::string>(), probe_memory_limit().bytes,
                                "--buffer-size");
  if (vm.count("buffer-size"))
    GPUSORT_EXPECTS(o.buffer_bytes > 0, "--buffer-size must be positive");
  if (vm.count("temporary-directory")) o.temp_dir = vm["temporary-directory"].as<std::string>();
  if (vm.count("parallel"))
    o.threads = static_cast<unsigned>(parse_count(vm["parallel"].as<std::string>(), "--parallel",
                                                  1, std::numeric_limits<unsigned>::max()));
  if (vm.count("devices")) o.devices = parse_devices(vm["devices"].as<std::string>());
  if (vm.count("algorithm")) o.algo = parse_algorithm(vm["algorithm"].as<std::string>());
  GPUSORT_EXPECTS(!((o.algo == algorithm::onesweep || o.algo == algorithm::hrs) &&
                    o.devices.how == device_selection::mode::none),
                  std::string("--algorithm ") + (o.algo == algorithm::hrs ? "hrs" : "onesweep") +
                      " sorts on a GPU, --devices none forbids one: drop one of the two");
  if (vm.count("gpu-memory"))
    o.gpu_memory_bytes = parse_size(vm["gpu-memory"].as<std::string>(), 0, "--gpu-memory");
  if (vm.count("merge-on")) o.merge = parse_merge_location(vm["merge-on"].as<std::string>());
  GPUSORT_EXPECTS(!(o.merge == merge_location::gpu &&
                    (o.devices.how == device_selection::mode::none || o.algo == algorithm::cpu)),
                  "--merge-on gpu needs a GPU, which --devices none and --algorithm cpu rule out: "
                  "drop one of the two");
  o.fsync = vm["fsync"].as<bool>();
  if (vm.count("direct-io")) o.direct = parse_direct_io(vm["direct-io"].as<std::string>());
  if (vm.count("stats")) {
    const std::string s = vm["stats"].as<std::string>();
    GPUSORT_EXPECTS(s == "text" || s == "json", "invalid --stats=" + s + " (expected json)");
    o.stats = s == "json" ? stats_format::json : stats_format::text;
  }
  if (vm.count("trace")) o.trace_path = vm["trace"].as<std::string>();
  o.verbose = vm["verbose"].as<bool>();
  o.progress = vm["progress"].as<bool>();
  req.no_fork = vm["no-fork"].as<bool>();

  std::vector<std::string> operands;
  if (vm.count("operand")) operands = vm["operand"].as<std::vector<std::string>>();
  if (req.check != check_mode::none) {
    // As sort: one input, and no output to name.
    GPUSORT_EXPECTS(!vm.count("output"), "-c/--check writes no output: drop -o");
    GPUSORT_EXPECTS(operands.size() <= 1,
                    "extra operand '" + (operands.size() > 1 ? operands[1] : "") +
                        "' not allowed with -c/--check");
    req.inputs = operands.empty() ? std::vector<std::string>{"-"} : operands;
    return req;
  }
  if (vm.count("output")) {
    req.output = vm["output"].as<std::string>();
    req.inputs = operands.empty() ? std::vector<std::string>{"-"} : operands;
  } else if (operands.size() <= 1) {
    req.inputs = operands.empty() ? std::vector<std::string>{"-"} : operands;
    req.output = "-";
  } else if (operands.size() == 2) {
    req.inputs = {operands[0]};
    req.output = operands[1];
  } else {
    throw_error("more than two operands: name the output with -o FILE");
  }
  return req;
}

}  // namespace gpusort::cli
