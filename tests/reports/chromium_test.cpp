// The report as a browser shows it: headless Chromium (Debian's `chromium`; scripts/bootstrap.sh installs it)
// renders the page offline; the screenshot must show the charts' colours and the rendered DOM must hold the SVG.
// Skipped, with the reason, where /usr/bin/chromium is absent.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#ifdef COMMSIM_HAVE_ZLIB
#include <zlib.h>
#endif

#include "reports/format.hpp"
#include "reports/result_report.hpp"
#include "reports/svg.hpp"
#include "sim/step/simulation.hpp"
#include "tests/reports/test_helpers.hpp"

namespace commsim::reports {
namespace {

const char* kChromium = "/usr/bin/chromium";

// Runs headless Chromium on `url` with `mode` (--screenshot=FILE or --dump-dom); returns its exit status.
int chromium(const std::string& mode, const std::string& url, const test::ScratchDir& dir,
             const std::string& stdout_file) {
  const std::string cmd =
      std::string(kChromium) +
      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-background-networking"
      " --disable-component-update --no-first-run --hide-scrollbars --user-data-dir=" +
      (dir / "profile") + " --window-size=1200,1600 " + mode + " " + url + " >" + stdout_file + " 2>" +
      (dir / "chromium.err");
  return std::system(cmd.c_str());
}

// A report with a visible amount of communication: ResNet-50 on 8 cloud VMs with 10 GbE, with its timeline.
std::string write_report(const test::ScratchDir& dir) {
  SimulationRun run =
      simulate_scenario("scenarios/resnet50-dgx-a100.json", {"topology=../topologies/cloud-tcp-10gbe.json", "nodes=8"},
                        2, Fidelity::Analytical);
  const std::vector<ReportInput> inputs = {
      {"resnet50.json", run.result, {"compute", "comm stream 1"}, "resnet50.json"}};
  write_file(dir / "report.html", results_html(inputs, "commsim report"), "t");
  return "file://" + (dir / "report.html");
}

struct Rgb {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // RGB, row-major
  std::string error;
};

#ifdef COMMSIM_HAVE_ZLIB
// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes) into RGB.
Rgb decode_png(const std::string& data) {
  Rgb img;
  auto be32 = [&](std::size_t at) {
    return static_cast<std::uint32_t>(static_cast<std::uint8_t>(data[at])) << 24 |
           static_cast<std::uint32_t>(static_cast<std::uint8_t>(data[at + 1])) << 16 |
           static_cast<std::uint32_t>(static_cast<std::uint8_t>(data[at + 2])) << 8 |
           static_cast<std::uint8_t>(data[at + 3]);
  };
  if (data.size() < 8 || data.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return img.error = "not a PNG", img;
  std::string idat;
  int channels = 0;
  for (std::size_t at = 8; at + 8 <= data.size();) {
    const std::uint32_t length = be32(at);
    const std::string type = data.substr(at + 4, 4);
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(at + 8));
      img.height = static_cast<int>(be32(at + 12));
      const int depth = data[at + 16], colour = data[at + 17], interlace = data[at + 20];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0)
        return img.error = "unsupported PNG format", img;
      channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += data.substr(at + 8, length);
    }
    at += 12 + length;
  }
  const std::size_t stride = static_cast<std::size_t>(img.width) * channels;
  std::vector<std::uint8_t> raw((stride + 1) * img.height);
  uLongf size = raw.size();
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      size != raw.size())
    return img.error = "corrupt image data", img;
  // Undo the per-row filters (PNG specification, section 9): None, Sub, Up, Average, Paeth.
  std::vector<std::uint8_t> prev(stride, 0), row(stride);
  for (int y = 0; y < img.height; ++y) {
    const std::uint8_t* in = &raw[y * (stride + 1)];
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<std::size_t>(channels) ? row[x - channels] : 0, b = prev[x],
                c = x >= static_cast<std::size_t>(channels) ? prev[x - channels] : 0;
      int predictor = 0;
      switch (in[0]) {
        case 1:
          predictor = a;
          break;
        case 2:
          predictor = b;
          break;
        case 3:
          predictor = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
      }
      row[x] = static_cast<std::uint8_t>(in[1 + x] + predictor);
    }
    for (int x = 0; x < img.width; ++x)
      for (int k = 0; k < 3; ++k) img.pixels.push_back(row[x * channels + k]);
    prev = row;
  }
  return img;
}
#endif

std::uint32_t colour(const std::string& hex) {
  return static_cast<std::uint32_t>(std::stoul(hex.substr(1), nullptr, 16));
}

TEST(Chromium, ScreenshotShowsTheCharts) {
  if (!std::filesystem::exists(kChromium))
    GTEST_SKIP() << kChromium << " is absent: install Debian's chromium (scripts/bootstrap.sh does)";
#ifndef COMMSIM_HAVE_ZLIB
  GTEST_SKIP() << "zlib (zlib1g-dev) was not found at configure time: cannot decode the screenshot";
#else
  test::ScratchDir dir("chromium-shot");
  const std::string url = write_report(dir);
  ASSERT_EQ(chromium("--screenshot=" + (dir / "shot.png"), url, dir, dir / "chromium.out"), 0)
      << test::read_text(dir / "chromium.err");
  const Rgb img = decode_png(test::read_text(dir / "shot.png"));
  ASSERT_EQ(img.error, "");
  ASSERT_EQ(img.width, 1200);
  ASSERT_EQ(img.height, 1600);
  // Count pixels per colour: not blank (a fair share differs from the white background), and the charts' fills
  // are there: palette 0 (compute bars, compute boxes of the timeline) and palette 1 (exposed communication,
  // communication boxes), as solid areas of at least 200 pixels each.
  std::map<std::uint32_t, std::size_t> histogram;
  for (std::size_t i = 0; i + 2 < img.pixels.size(); i += 3)
    ++histogram[static_cast<std::uint32_t>(img.pixels[i]) << 16 | static_cast<std::uint32_t>(img.pixels[i + 1]) << 8 |
                img.pixels[i + 2]];
  const std::size_t total = static_cast<std::size_t>(img.width) * img.height;
  EXPECT_LT(histogram[0xffffff], total * 97 / 100) << "the page is (almost) blank";
  EXPECT_GE(histogram.size(), 10u);
  EXPECT_GE(histogram[colour(palette(0))], 200u) << "no compute fill " << palette(0);
  EXPECT_GE(histogram[colour(palette(1))], 200u) << "no communication fill " << palette(1);
#endif
}

TEST(Chromium, RenderedDomHoldsTheSvgCharts) {
  if (!std::filesystem::exists(kChromium))
    GTEST_SKIP() << kChromium << " is absent: install Debian's chromium (scripts/bootstrap.sh does)";
  test::ScratchDir dir("chromium-dom");
  const std::string url = write_report(dir);
  ASSERT_EQ(chromium("--dump-dom", url, dir, dir / "dom.html"), 0) << test::read_text(dir / "chromium.err");
  const std::string dom = test::read_text(dir / "dom.html");
  // the three charts of a one-result report with a trace, as SVG elements of the rendered document
  for (const char* chart : {"data-chart=\"breakdown\"", "data-chart=\"step-times\"", "data-chart=\"timeline-0\""})
    EXPECT_NE(dom.find(chart), std::string::npos) << chart;
  std::size_t svgs = 0, boxes = 0;
  for (std::size_t at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1)) ++svgs;
  for (std::size_t at = dom.find("class=\"event\""); at != std::string::npos; at = dom.find("class=\"event\"", at + 1))
    ++boxes;
  EXPECT_EQ(svgs, 3u);
  EXPECT_GT(boxes, 100u);  // ResNet-50: a box per layer forward and backward, plus the bucket allreduces
}

}  // namespace
}  // namespace commsim::reports
