// A small parser of the Prometheus text format, enough to check our own exposition:
// samples with their labels and values, and the TYPE of each family.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace linecap::test {

using LabelSet = std::map<std::string, std::string>;

struct Sample {
    std::string name;
    LabelSet labels;
    double value = 0;
};

struct Scrape {
    std::vector<Sample> samples;
    std::map<std::string, std::string> types;   // family name → counter/gauge/histogram

    // The value of the one sample with exactly these labels; nullopt if absent.
    std::optional<double> value(const std::string& name, const LabelSet& labels = {}) const {
        for (const Sample& s : samples) {
            if (s.name == name && s.labels == labels) return s.value;
        }
        return std::nullopt;
    }
    std::vector<Sample> series(const std::string& name) const {
        std::vector<Sample> out;
        for (const Sample& s : samples) {
            if (s.name == name) out.push_back(s);
        }
        return out;
    }
    // Sum over every series of `name` whose labels include `match`.
    double sum(const std::string& name, const LabelSet& match = {}) const {
        double total = 0;
        for (const Sample& s : series(name)) {
            bool all = true;
            for (const auto& [k, v] : match) all = all && s.labels.count(k) && s.labels.at(k) == v;
            if (all) total += s.value;
        }
        return total;
    }
};

inline Scrape parse_scrape(const std::string& text) {
    Scrape scrape;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.empty()) continue;
        if (line.rfind("# TYPE ", 0) == 0) {
            std::istringstream words(line.substr(7));
            std::string name, type;
            words >> name >> type;
            scrape.types[name] = type;
            continue;
        }
        if (line[0] == '#') continue;
        Sample sample;
        size_t i = line.find_first_of("{ ");
        sample.name = line.substr(0, i);
        if (line[i] == '{') {
            ++i;
            while (line[i] != '}') {
                const size_t eq = line.find('=', i);
                const std::string key = line.substr(i, eq - i);
                i = eq + 2;  // past ="
                std::string value;
                for (; line[i] != '"'; ++i) {
                    if (line[i] == '\\') {
                        ++i;
                        value += line[i] == 'n' ? '\n' : line[i];
                    } else {
                        value += line[i];
                    }
                }
                ++i;  // closing quote
                if (line[i] == ',') ++i;
                sample.labels[key] = value;
            }
            ++i;  // }
        }
        const std::string value = line.substr(i + 1);
        if (value == "Nan" || value == "NaN") {
            sample.value = std::nan("");
        } else if (value == "+Inf") {
            sample.value = INFINITY;
        } else {
            sample.value = std::strtod(value.c_str(), nullptr);
        }
        scrape.samples.push_back(std::move(sample));
    }
    return scrape;
}

}  // namespace linecap::test
