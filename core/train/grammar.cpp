// grammar.cpp: the grammar behind headmap's built-in training text (see grammar.h).
//
// Sections: [words] [phrases] [stories] [facts] [numbers] [repeats] [corpus]
//
// Every draw from the Rng is its own statement (a named local), in a fixed order: C++
// leaves unspecified the order in which a call's arguments and the operands of + are
// evaluated, so draws made inside one expression come out in a different order with
// another compiler (clang's text differed from GCC's). Each order below is the one GCC 12
// used when the draws sat inside the expressions (for a chain of +, last operand first),
// so the text is still assets/corpus/grammar-v1.txt byte for byte, now with every compiler.
#include "core/train/grammar.h"

#include <algorithm>
#include <iterator>

#include "core/math/rng.h"

namespace headmap {

// ---- [words] ---------------------------------------------------------------------------
namespace {

// Who a noun is, for pronouns: animals and things are "it", people "he" or "she".
enum class Kind { Animal, Person, Male, Female, Thing };

struct Noun {
  const char* sg;
  const char* pl;
  Kind kind;
};

const Noun kAnimals[] = {
    {"cat", "cats", Kind::Animal},       {"dog", "dogs", Kind::Animal},       {"chicken", "chickens", Kind::Animal},
    {"animal", "animals", Kind::Animal}, {"horse", "horses", Kind::Animal},   {"bird", "birds", Kind::Animal},
    {"fox", "foxes", Kind::Animal},      {"mouse", "mice", Kind::Animal},     {"cow", "cows", Kind::Animal},
    {"goat", "goats", Kind::Animal},     {"rabbit", "rabbits", Kind::Animal}, {"duck", "ducks", Kind::Animal},
    {"owl", "owls", Kind::Animal},       {"sheep", "sheep", Kind::Animal},    {"puppy", "puppies", Kind::Animal},
    {"kitten", "kittens", Kind::Animal},
};

const Noun kPeople[] = {
    {"lawyer", "lawyers", Kind::Person},  {"teacher", "teachers", Kind::Person}, {"doctor", "doctors", Kind::Person},
    {"farmer", "farmers", Kind::Person},  {"child", "children", Kind::Person},   {"student", "students", Kind::Person},
    {"king", "kings", Kind::Male},        {"queen", "queens", Kind::Female},     {"baker", "bakers", Kind::Person},
    {"pilot", "pilots", Kind::Person},    {"judge", "judges", Kind::Person},     {"nurse", "nurses", Kind::Person},
    {"boy", "boys", Kind::Male},          {"girl", "girls", Kind::Female},       {"man", "men", Kind::Male},
    {"woman", "women", Kind::Female},     {"friend", "friends", Kind::Person},   {"neighbour", "neighbours", Kind::Person},
    {"sailor", "sailors", Kind::Person},  {"painter", "painters", Kind::Person}, {"writer", "writers", Kind::Person},
    {"witness", "witnesses", Kind::Person}, {"guard", "guards", Kind::Person},   {"singer", "singers", Kind::Person},
};
// A collective noun that is grammatically singular: "the jury believes".
const Noun kJury = {"jury", "juries", Kind::Thing};

// Things to sit or lie on: "sat on the mat because it was soft".
const Noun kSeats[] = {
    {"mat", "mats", Kind::Thing},   {"rug", "rugs", Kind::Thing},       {"bed", "beds", Kind::Thing},
    {"chair", "chairs", Kind::Thing}, {"sofa", "sofas", Kind::Thing},   {"bench", "benches", Kind::Thing},
    {"step", "steps", Kind::Thing}, {"blanket", "blankets", Kind::Thing}, {"pillow", "pillows", Kind::Thing},
    {"floor", "floors", Kind::Thing},
};
// Things to cross: "didn't cross the road because it was too wide".
const Noun kCrossings[] = {
    {"road", "roads", Kind::Thing},   {"street", "streets", Kind::Thing}, {"river", "rivers", Kind::Thing},
    {"bridge", "bridges", Kind::Thing}, {"field", "fields", Kind::Thing}, {"stream", "streams", Kind::Thing},
    {"square", "squares", Kind::Thing}, {"valley", "valleys", Kind::Thing},
};
// Other things: places and objects.
const Noun kThings[] = {
    {"box", "boxes", Kind::Thing},      {"table", "tables", Kind::Thing}, {"house", "houses", Kind::Thing},
    {"door", "doors", Kind::Thing},     {"window", "windows", Kind::Thing}, {"book", "books", Kind::Thing},
    {"letter", "letters", Kind::Thing}, {"cup", "cups", Kind::Thing},   {"ball", "balls", Kind::Thing},
    {"hat", "hats", Kind::Thing},       {"car", "cars", Kind::Thing},   {"boat", "boats", Kind::Thing},
    {"tree", "trees", Kind::Thing},     {"garden", "gardens", Kind::Thing}, {"hill", "hills", Kind::Thing},
    {"wall", "walls", Kind::Thing},     {"rope", "ropes", Kind::Thing}, {"coat", "coats", Kind::Thing},
    {"basket", "baskets", Kind::Thing}, {"lamp", "lamps", Kind::Thing}, {"key", "keys", Kind::Thing},
    {"shoe", "shoes", Kind::Thing},     {"bag", "bags", Kind::Thing},   {"kite", "kites", Kind::Thing},
    {"barn", "barns", Kind::Thing},     {"gate", "gates", Kind::Thing}, {"clock", "clocks", Kind::Thing},
    {"map", "maps", Kind::Thing},       {"apple", "apples", Kind::Thing}, {"candle", "candles", Kind::Thing},
};

struct Name {
  const char* name;
  bool female;
};
const Name kNames[] = {
    {"Tom", false}, {"Anna", true},  {"Mia", true},   {"Sam", false},  {"Lucy", true}, {"Ben", false},  {"Ella", true},
    {"Max", false}, {"Nora", true},  {"Leo", false},  {"Ava", true},   {"Jack", false}, {"Rosa", true}, {"Omar", false},
    {"Iris", true}, {"Hugo", false}, {"Zoe", true},   {"Ivan", false}, {"Lena", true}, {"Paul", false}, {"Maya", true},
    {"Theo", false}, {"Ruth", true}, {"Carl", false},
};

// Verb forms: third person singular present, plural present, past.
struct Verb {
  const char* s3;
  const char* base;
  const char* past;
};
// Staying put: take "on / under / near ... the X".
const Verb kRestVerbs[] = {
    {"sits", "sit", "sat"},       {"sleeps", "sleep", "slept"}, {"waits", "wait", "waited"}, {"rests", "rest", "rested"},
    {"stands", "stand", "stood"}, {"stays", "stay", "stayed"},  {"plays", "play", "played"}, {"hides", "hide", "hid"},
    {"lies", "lie", "lay"},       {"sings", "sing", "sang"},
};
const char* const kRestPreps[] = {"on", "under", "near", "behind", "beside", "by"};
// Moving: take "across / along ... the X".
const Verb kMoveVerbs[] = {
    {"runs", "run", "ran"},       {"walks", "walk", "walked"}, {"jumps", "jump", "jumped"}, {"goes", "go", "went"},
    {"hurries", "hurry", "hurried"}, {"climbs", "climb", "climbed"}, {"rushes", "rush", "rushed"},
};
const char* const kMovePreps[] = {"across", "along", "over", "into", "past", "through", "toward"};
// Taking an animate object.
const Verb kTransitive[] = {
    {"sees", "see", "saw"},         {"likes", "like", "liked"},     {"believes", "believe", "believed"},
    {"helps", "help", "helped"},    {"follows", "follow", "followed"}, {"chases", "chase", "chased"},
    {"watches", "watch", "watched"}, {"finds", "find", "found"},    {"calls", "call", "called"},
    {"trusts", "trust", "trusted"}, {"knows", "know", "knew"},      {"meets", "meet", "met"},
    {"thanks", "thank", "thanked"}, {"visits", "visit", "visited"}, {"hears", "hear", "heard"},
    {"fears", "fear", "feared"},    {"admires", "admire", "admired"},
};
// Intransitive endings for a clause: "... smiled."
const Verb kIntransitive[] = {
    {"smiles", "smile", "smiled"}, {"laughs", "laugh", "laughed"}, {"leaves", "leave", "left"},
    {"waits", "wait", "waited"},   {"nods", "nod", "nodded"},       {"cries", "cry", "cried"},
    {"stops", "stop", "stopped"},  {"wins", "win", "won"},          {"lies", "lie", "lied"},
};
const char* const kTellObjects[] = {"the truth", "a lie", "a story", "a joke", "the news", "a secret"};

// How someone is: "because it was tired".
const char* const kMoods[] = {"tired", "hungry", "happy", "sad", "afraid", "sleepy", "cold", "busy", "angry",
                              "lost", "late", "sick", "scared", "bored", "calm", "kind", "brave", "old"};
// How a crossing is: "because it was too wide".
const char* const kCrossingStates[] = {"wide", "long", "busy", "dark", "narrow", "steep", "deep", "wet", "icy", "high"};
// How a seat is: "because it was soft".
const char* const kSeatStates[] = {"soft", "warm", "clean", "dry", "comfortable", "flat", "new", "quiet"};
// Colours and sizes for lists of things.
const char* const kColours[] = {"red", "blue", "green", "yellow", "white", "black", "small", "big", "old", "new", "brown", "grey"};

// Plain words for the random lists of repeat lines (besides every noun above).
const char* const kListWords[] = {"stone", "river", "cloud", "pencil", "window", "silver", "orange", "planet", "forest",
                                  "candle", "bridge", "marble", "rocket", "violin", "tiger", "copper", "island", "lantern",
                                  "meadow", "button", "harbor", "jacket", "kettle", "ladder", "mirror", "needle",
                                  "pepper", "saddle", "temple", "umbrella", "wagon", "zebra", "anchor", "cactus",
                                  "dragon", "engine", "falcon", "hammer", "jungle", "lemon", "magnet", "garden"};

template <class T, size_t N>
const T& pick(Rng& r, const T (&a)[N]) {
  return a[r.below(static_cast<int>(N))];
}
bool chance(Rng& r, double p) { return r.uniform() < p; }

// "a" or "an" before a word.
std::string a_or_an(const std::string& w) { return std::string(std::string("aeiou").find(w[0]) != std::string::npos ? "an " : "a ") + w; }

std::string cap(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

// ---- [phrases] -------------------------------------------------------------------------
// A noun phrase with its number and the pronouns that refer back to it.
struct NP {
  std::string text;   // "the cat", "Anna"
  bool plural = false;
  Kind kind = Kind::Thing;
  bool female = false;  // for Kind::Person: the line picks he or she once

  const char* subj() const {  // he / she / it / they
    if (plural) return "they";
    if (kind == Kind::Male || (kind == Kind::Person && !female)) return "he";
    if (kind == Kind::Female || (kind == Kind::Person && female)) return "she";
    return "it";
  }
  const char* obj() const {  // him / her / it / them
    if (plural) return "them";
    const std::string s = subj();
    return s == "he" ? "him" : s == "she" ? "her" : "it";
  }
  const char* be_past() const { return plural ? "were" : "was"; }
  const char* be_present() const { return plural ? "are" : "is"; }
  const char* verb(const Verb& v, bool past) const { return past ? v.past : plural ? v.base : v.s3; }
};

NP noun_phrase(Rng& r, const Noun& n, double plural_p = 0.3) {
  NP np;
  np.plural = chance(r, plural_p);
  np.text = std::string("the ") + (np.plural ? n.pl : n.sg);
  np.kind = n.kind;
  np.female = chance(r, 0.5);
  return np;
}
NP animate(Rng& r, double plural_p = 0.3) {
  return chance(r, 0.5) ? noun_phrase(r, pick(r, kAnimals), plural_p) : noun_phrase(r, pick(r, kPeople), plural_p);
}
NP person_or_name(Rng& r) {
  if (chance(r, 0.3)) {
    const Name& n = pick(r, kNames);
    NP np;
    np.text = n.name;
    np.kind = n.female ? Kind::Female : Kind::Male;
    return np;
  }
  return noun_phrase(r, pick(r, kPeople));
}
// "who" for people, "that" for animals (and sometimes for people too).
const char* rel(Rng& r, const NP& np) { return (np.kind == Kind::Animal || np.kind == Kind::Thing || chance(r, 0.2)) ? "that" : "who"; }

std::string didnt(Rng& r) { return chance(r, 0.25) ? "didn\xE2\x80\x99t" : "didn't"; }  // the chapter spells it with U+2019

// A verb phrase for subject s: "sat on the mat", "ran across the road", "told the truth".
std::string verb_phrase(Rng& r, const NP& s, bool past) {
  switch (r.below(5)) {
    case 0: {
      const Noun& seat = pick(r, kSeats);
      const char* prep = pick(r, kRestPreps);
      const Verb& v = pick(r, kRestVerbs);
      return std::string(s.verb(v, past)) + " " + prep + " the " + seat.sg;
    }
    case 1: {
      const Noun& crossing = pick(r, kCrossings);
      const char* prep = pick(r, kMovePreps);
      const Verb& v = pick(r, kMoveVerbs);
      return std::string(s.verb(v, past)) + " " + prep + " the " + crossing.sg;
    }
    case 2: return std::string(s.verb(Verb{"tells", "tell", "told"}, past)) + " " + pick(r, kTellObjects);
    case 3: return std::string(s.verb(pick(r, kIntransitive), past));
    default: return std::string(past ? s.be_past() : s.be_present()) + " " + pick(r, kMoods);
  }
}

// ---- [stories] -------------------------------------------------------------------------
// "The cat sat on the mat because it was tired." / "... because it was soft."
std::string sat_because(Rng& r) {
  const NP s = animate(r);
  const bool past = chance(r, 0.75);
  const Noun& seat = pick(r, kSeats);
  const char* prep = pick(r, kRestPreps);
  const Verb& v = pick(r, kRestVerbs);
  std::string out = cap(s.text) + " " + s.verb(v, past) + " " + prep + " the " + seat.sg + " because ";
  if (chance(r, 0.6)) out += std::string(s.subj()) + " " + (past ? s.be_past() : s.be_present()) + " " + pick(r, kMoods);
  else out += std::string("it ") + (past ? "was " : "is ") + pick(r, kSeatStates);
  return out + ".";
}

// "The chicken didn't cross the road because it was too wide." / "... too tired."
std::string cross_because(Rng& r) {
  const NP s = animate(r, 0.35);
  const Noun& road = pick(r, kCrossings);
  const bool past = chance(r, 0.7);
  std::string neg = past ? didnt(r) : (s.plural ? "don't" : "doesn't");
  std::string out = cap(s.text) + " " + neg + " cross the " + road.sg + " because ";
  if (chance(r, 0.5)) out += std::string("it ") + (past ? "was" : "is") + " too " + pick(r, kCrossingStates);
  else out += std::string(s.subj()) + " " + (past ? s.be_past() : s.be_present()) + " too " + pick(r, kMoods);
  return out + ".";
}

// "The lawyer who the jury believed told the truth." Agreement of both verbs is visible
// in the present: "The lawyers who the judge believes tell the truth."
std::string object_relative(Rng& r) {
  const NP head = chance(r, 0.75) ? noun_phrase(r, pick(r, kPeople), 0.35) : noun_phrase(r, pick(r, kAnimals), 0.35);
  NP inner;
  if (chance(r, 0.2)) inner = noun_phrase(r, kJury, 0.0);
  else inner = chance(r, 0.8) ? noun_phrase(r, pick(r, kPeople), 0.35) : person_or_name(r);
  const bool past = chance(r, 0.6);
  const std::string vp = verb_phrase(r, head, past);
  const Verb& v = pick(r, kTransitive);
  const char* relative = rel(r, head);
  return cap(head.text) + " " + relative + " " + inner.text + " " + inner.verb(v, past) + " " + vp + ".";
}

// "The dog that chased the cats was tired."
std::string subject_relative(Rng& r) {
  const NP head = animate(r, 0.4);
  const NP obj = animate(r, 0.4);
  const bool past = chance(r, 0.6);
  const std::string vp = verb_phrase(r, head, past);
  const Verb& v = pick(r, kTransitive);
  const char* relative = rel(r, head);
  return cap(head.text) + " " + relative + " " + head.verb(v, past) + " " + obj.text + " " + vp + ".";
}

// "Anna saw the dogs. She followed them across the field because they were lost."
std::string pronoun_story(Rng& r) {
  const Name& n = pick(r, kNames);
  NP who;
  who.text = n.name;
  who.kind = n.female ? Kind::Female : Kind::Male;
  const NP obj = animate(r, 0.4);
  const bool past = chance(r, 0.8);
  std::string out = who.text + " " + who.verb(pick(r, kTransitive), past) + " " + obj.text + ". ";
  switch (r.below(3)) {
    case 0: {
      const char* mood = pick(r, kMoods);
      const Verb& v = pick(r, kTransitive);
      out += cap(who.subj()) + " " + who.verb(v, past) + " " + obj.obj() + " because " + obj.subj() + " " +
             (past ? obj.be_past() : obj.be_present()) + " " + mood + ".";
      break;
    }
    case 1:
      out += cap(obj.subj()) + " " + verb_phrase(r, obj, past) + ".";
      break;
    default: {
      const std::string obj_vp = verb_phrase(r, obj, past);
      const std::string who_vp = verb_phrase(r, who, past);
      out += cap(who.subj()) + " " + who_vp + " and " + obj.subj() + " " + obj_vp + ".";
    }
  }
  return out;
}

// "The teachers sit near the bench." / "Tom said that the cat slept under the bed."
std::string simple_sentence(Rng& r) {
  if (chance(r, 0.3)) {
    const Name& n = pick(r, kNames);
    const NP s = animate(r);
    const std::string vp = verb_phrase(r, s, true);
    const char* said = chance(r, 0.5) ? " said that " : " knew that ";
    return std::string(n.name) + said + s.text + " " + vp + ".";
  }
  if (chance(r, 0.3)) {
    const NP s = animate(r);
    const bool past = chance(r, 0.7);
    const std::string then_vp = verb_phrase(r, s, past);
    const std::string when_vp = verb_phrase(r, s, past);
    return "When " + s.text + " " + when_vp + ", " + s.subj() + " " + then_vp + ".";
  }
  const NP s = animate(r, 0.4);
  return cap(s.text) + " " + verb_phrase(r, s, chance(r, 0.5)) + ".";
}

std::string story_sentence(Rng& r) {
  switch (r.below(7)) {
    case 0: return sat_because(r);
    case 1: return cross_because(r);
    case 2: return object_relative(r);
    case 3: return subject_relative(r);
    case 4: return pronoun_story(r);
    default: return simple_sentence(r);
  }
}

// ---- [facts] ---------------------------------------------------------------------------
// Lists of fixed pairs with the other pairs as distractors: after "says", "is" or "and"
// only the word just before decides the next one, so a head that reads the previous
// token pays off at once (the first half of an induction circuit).
struct Pair {
  const char* a;
  const char* b;
};
const Pair kSounds[] = {{"cat", "meow"},    {"dog", "woof"},    {"cow", "moo"},    {"duck", "quack"}, {"sheep", "baa"},
                        {"owl", "hoot"},    {"horse", "neigh"}, {"mouse", "squeak"}, {"bird", "tweet"}, {"goat", "bleat"},
                        {"lion", "roars"},  {"frog", "croak"},  {"pig", "oink"},   {"bee", "buzz"},   {"snake", "hiss"},
                        {"wolf", "howl"},   {"chicken", "cluck"}, {"fox", "yelps"}};
const Pair kColourFacts[] = {{"grass", "green"}, {"snow", "white"}, {"the sky", "blue"}, {"coal", "black"}, {"blood", "red"},
                             {"the sun", "yellow"}, {"milk", "white"}, {"the night", "dark"}, {"fire", "hot"}, {"ice", "cold"},
                             {"a lemon", "sour"}, {"honey", "sweet"}, {"the sea", "salty"}, {"a rock", "hard"}, {"wool", "soft"},
                             {"a feather", "light"}, {"iron", "heavy"}, {"glass", "clear"}};
const Pair kOpposites[] = {{"up", "down"},   {"hot", "cold"},    {"big", "small"},  {"old", "new"},     {"left", "right"},
                           {"day", "night"}, {"fast", "slow"},   {"in", "out"},     {"open", "shut"},   {"black", "white"},
                           {"happy", "sad"}, {"near", "far"},    {"early", "late"}, {"rich", "poor"},   {"wet", "dry"},
                           {"high", "low"},  {"first", "last"},  {"loud", "quiet"}};

template <size_t N>
std::vector<Pair> sample_pairs(Rng& r, const Pair (&all)[N], int k) {
  std::vector<Pair> v(std::begin(all), std::end(all));
  for (int i = 0; i < k; ++i) std::swap(v[static_cast<size_t>(i)], v[static_cast<size_t>(i + r.below(static_cast<int>(N) - i))]);
  v.resize(static_cast<size_t>(k));
  return v;
}

std::string and_list(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return s;
}

// "The cat says meow, the dog says woof and the cow says moo."
std::string facts_line(Rng& r) {
  const int k = 3 + r.below(4);
  std::vector<std::string> items;
  switch (r.below(3)) {
    case 0:
      for (const Pair& p : sample_pairs(r, kSounds, k)) items.push_back(std::string("the ") + p.a + " says " + p.b);
      break;
    case 1:
      for (const Pair& p : sample_pairs(r, kColourFacts, k)) items.push_back(std::string(p.a) + " is " + p.b);
      break;
    default:
      for (const Pair& p : sample_pairs(r, kOpposites, k)) items.push_back(std::string(p.a) + " and " + p.b);
  }
  return cap(and_list(items)) + ".";
}

// ---- [numbers] -------------------------------------------------------------------------
// The last digits of a Fibonacci-like sequence, in words: each number is the sum of the two
// before it, mod 10 ("one two three five eight three one four ..."). The next word depends
// on exactly the current and the previous word at every position, and on nothing else, so
// a head that always reads the previous token (by position, not by content) pays off on
// every token. Such a head is the first half of an induction circuit.
const char* const kDigits[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};

std::string numbers_line(Rng& r) {
  int a = r.below(10), b = r.below(10);
  std::string out = std::string(kDigits[a]) + " " + kDigits[b];
  const int n = 18 + r.below(31);  // 20..50 numbers
  for (int i = 0; i < n; ++i) {
    const int c = (a + b) % 10;
    out += std::string(" ") + kDigits[c];
    a = b;
    b = c;
  }
  return out;
}

// ---- [repeats] -------------------------------------------------------------------------
// Every lowercase word of the grammar that a random list may use.
const std::vector<std::string>& list_pool() {
  static const std::vector<std::string> pool = [] {
    std::vector<std::string> p(std::begin(kListWords), std::end(kListWords));
    auto add = [&](const auto& nouns) {
      for (const Noun& n : nouns) p.push_back(n.sg);
    };
    add(kAnimals);
    add(kPeople);
    add(kSeats);
    add(kCrossings);
    add(kThings);
    for (const char* w : kMoods) p.push_back(w);
    for (const char* w : kColours) p.push_back(w);
    for (const Verb& v : kTransitive) p.push_back(v.past);
    for (const auto* facts : {&kSounds, &kOpposites})
      for (const Pair& f : *facts) {
        p.push_back(f.a);
        p.push_back(f.b);
      }
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    return p;
  }();
  return pool;
}

std::string join(const std::vector<std::string>& w, const char* sep) {
  std::string s;
  for (size_t i = 0; i < w.size(); ++i) s += (i ? sep : "") + w[i];
  return s;
}

// "lamp owl river kite ... lamp owl river kite ...": a random span, then the same again.
std::string random_list_repeat(Rng& r) {
  const std::vector<std::string>& pool = list_pool();
  const int copies = chance(r, 0.25) ? 3 : 2;
  const int k = copies == 3 ? 4 + r.below(9) : 5 + r.below(16);  // 4..12 or 5..20 words
  std::vector<std::string> w;
  for (int i = 0; i < k; ++i) w.push_back(pool[r.below(static_cast<int>(pool.size()))]);
  const std::string once = join(w, " ");
  const int style = r.below(3);
  std::string out;
  for (int c = 0; c < copies; ++c) {
    if (style == 0) out += (c ? " " : "") + once;                 // back to back, as the probe
    else if (style == 1) out += (c ? " " : "") + once + ".";     // sentence-like
    else out += (c ? ", again: " : "") + once;
  }
  return out;
}

// "Tom, Mia and Zoe waited near the gate. Later Tom, Mia and Zoe left."
std::string names_repeat(Rng& r) {
  const int k = 2 + r.below(4);
  std::vector<std::string> n;
  while (static_cast<int>(n.size()) < k) {  // distinct names
    const std::string name = pick(r, kNames).name;
    if (std::find(n.begin(), n.end(), name) == n.end()) n.push_back(name);
  }
  std::string group;
  for (int i = 0; i < k; ++i) group += (i == 0 ? "" : i + 1 == k ? " and " : ", ") + n[i];
  NP s;
  s.plural = true;
  s.kind = Kind::Person;
  const std::string second_vp = verb_phrase(r, s, true);
  const char* later = chance(r, 0.5) ? "Later " : "Then ";
  const std::string first_vp = verb_phrase(r, s, true);
  return group + " " + first_vp + ". " + later + group + " " + second_vp + ".";
}

// "Anna packed a red kite, a small cup and a green hat. Then Anna unpacked a red kite, ..."
std::string items_repeat(Rng& r) {
  const Name& n = pick(r, kNames);
  const int k = 2 + r.below(4);
  std::vector<std::string> items;
  for (int i = 0; i < k; ++i) {
    const Noun& thing = pick(r, kThings);
    const char* colour = pick(r, kColours);
    items.push_back(a_or_an(std::string(colour) + " " + thing.sg));
  }
  std::string list;
  for (int i = 0; i < k; ++i) list += (i == 0 ? "" : i + 1 == k ? " and " : ", ") + items[i];
  static const char* const kVerbs[][2] = {{"packed", "unpacked"}, {"bought", "sold"}, {"found", "lost"}, {"drew", "painted"}, {"saw", "counted"}};
  const auto& v = kVerbs[r.below(5)];
  return std::string(n.name) + " " + v[0] + " " + list + ". Then " + (chance(r, 0.5) ? n.name : (n.female ? "she" : "he")) + " " + v[1] +
         " " + list + ".";
}

// A story sentence said twice.
std::string sentence_repeat(Rng& r) {
  const std::string s = story_sentence(r);
  return s + (chance(r, 0.5) ? " " : std::string(" ") + pick(r, kNames).name + " said it again: ") + s;
}

}  // namespace

// ---- [corpus] --------------------------------------------------------------------------
const std::vector<std::string>& chapter_sentences() {
  static const std::vector<std::string> s = {
      "The cat sat on the mat because it was tired.",
      "The cat sat on the mat because it was soft.",
      "The lawyer who the jury believed told the truth.",
      "The chicken didn't cross the road because it was too wide.",
      "The chicken didn\xE2\x80\x99t cross the road because it was too wide.",
      "The animal didn't cross the street because it was too tired.",
  };
  return s;
}

std::string generate_grammar_corpus(const GrammarCorpusOptions& o) {
  Rng r(combine(o.seed, 0xC0A9ull));
  std::string out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, o.target_bytes)) + 256);
  while (static_cast<int64_t>(out.size()) < o.target_bytes) {
    std::string line;
    const double u = r.uniform();
    if (u < o.repeat_fraction) {
      switch (r.below(20)) {
        case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12:
          line = random_list_repeat(r);
          break;
        case 13: case 14: line = names_repeat(r); break;
        case 15: case 16: line = items_repeat(r); break;
        default: line = sentence_repeat(r); break;
      }
    } else if (u < o.repeat_fraction + o.facts_fraction) {
      line = facts_line(r);
    } else if (u < o.repeat_fraction + o.facts_fraction + o.numbers_fraction) {
      line = numbers_line(r);
    } else {
      const int n = 1 + r.below(3);
      for (int i = 0; i < n; ++i) {
        // The chapters' sentences themselves, now and then, so they are in-distribution
        // word for word (the rules produce them too, but rarely).
        const std::string s = chance(r, 0.01) ? chapter_sentences()[r.below(static_cast<int>(chapter_sentences().size()))] : story_sentence(r);
        line += (i ? " " : "") + s;
      }
    }
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace headmap
