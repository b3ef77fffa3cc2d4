// The worker-thread helper shared by the compute and training workers: the latest posted
// job wins, busy() covers queued and running jobs, and the destructor waits for the job in
// progress. Its results are handed over under a lock, as the workers do. No timing is
// asserted: the test waits on conditions.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "app/gui/workers/worker_thread.h"

using headmap::WorkerThread;

TEST(WorkerThread, RunsTheNewestJobAndDropsReplacedOnes) {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, release = false;
  std::vector<int> ran;  // guarded by mu
  {
    WorkerThread<int> w(0, [&](int& job) {
      std::unique_lock<std::mutex> lock(mu);
      if (job == 1) {  // hold the first job until 2, 3 and 4 are queued behind it
        started = true;
        cv.notify_all();
        cv.wait(lock, [&] { return release; });
      }
      ran.push_back(job);
      cv.notify_all();
    });
    w.post(1);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return started; });
    }
    w.post(2);
    w.post(3);
    w.post(4);
    EXPECT_TRUE(w.busy());
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return ran.size() >= 2 && ran.back() == 4; });
  }  // the destructor joins
  ASSERT_EQ(ran.size(), 2u);
  EXPECT_EQ(ran[0], 1);
  EXPECT_EQ(ran[1], 4);
}

TEST(WorkerThread, TheDestructorWaitsForTheJobInProgress) {
  std::atomic<bool> started{false}, finished{false};
  {
    WorkerThread<int> w(0, [&](int&) {
      started = true;
      std::atomic<long> spin{0};
      while (spin.fetch_add(1) < 1000000) {
      }
      finished = true;
    });
    w.post(0);
    while (!started) std::this_thread::yield();
  }
  EXPECT_TRUE(finished);
}
